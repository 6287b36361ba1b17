"""load_dataset over local files: formats, splits, caching and bad input."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dagster_ds import Dataset, DatasetDict, MalformedFileError
from dagster_ds.cache import CacheStore
from dagster_ds.load import load_dataset

ROWS = [{"id": i, "text": f"line {i}"} for i in range(30)]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    with gzip.open(tmp_path / "rows.jsonl.gz", "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in ROWS)
    (tmp_path / "rows.csv").write_text(
        "id,text\n" + "".join(f"{r['id']},{r['text']}\n" for r in ROWS)
    )
    (tmp_path / "rows.txt").write_text("".join(f"{r['text']}\n" for r in ROWS))
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "rows.parquet", row_group_size=10)
    return tmp_path


@pytest.mark.parametrize(
    ("fmt", "name"),
    [
        ("json", "rows.jsonl"),
        ("json", "rows.jsonl.gz"),
        ("csv", "rows.csv"),
        ("parquet", "rows.parquet"),
    ],
)
def test_each_format_loads_the_same_rows(files: Path, fmt: str, name: str) -> None:
    ds = load_dataset(fmt, data_files=str(files / name), split="train")
    assert isinstance(ds, Dataset)
    assert ds.to_list() == ROWS


def test_text_files_give_a_text_column(files: Path) -> None:
    ds = load_dataset("text", data_files=str(files / "rows.txt"), split="train")
    assert ds["text"][:3] == ["line 0", "line 1", "line 2"]


def test_a_dict_of_splits_gives_a_dataset_dict(files: Path) -> None:
    splits = load_dataset(
        "json",
        data_files={"train": str(files / "rows.jsonl"), "test": str(files / "rows.jsonl.gz")},
    )
    assert isinstance(splits, DatasetDict)
    assert splits.num_rows == {"train": 30, "test": 30}
    assert splits["test"].split == "test"


def test_parquet_columns_and_filters(files: Path) -> None:
    ds = load_dataset(
        "parquet",
        data_files=str(files / "rows.parquet"),
        split="train",
        columns=["id"],
        filters=[("id", ">=", 25)],
    )
    assert ds.to_list() == [{"id": i} for i in range(25, 30)]


def test_loading_again_reuses_the_cache_and_a_changed_file_does_not(files: Path) -> None:
    first = load_dataset("json", data_files=str(files / "rows.jsonl"), split="train")
    again = load_dataset("json", data_files=str(files / "rows.jsonl"), split="train")
    assert again.fingerprint == first.fingerprint
    assert again.cache_files == first.cache_files
    with (files / "rows.jsonl").open("a") as f:
        f.write(json.dumps({"id": 30, "text": "line 30"}) + "\n")
    changed = load_dataset("json", data_files=str(files / "rows.jsonl"), split="train")
    assert changed.fingerprint != first.fingerprint
    assert changed.num_rows == 31


def test_a_malformed_json_line_is_named_and_nothing_is_cached(files: Path) -> None:
    lines = (files / "rows.jsonl").read_text().splitlines()
    lines[6] = '{"id": 6, "text": '
    (files / "bad.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(MalformedFileError, match=r"bad\.jsonl.*line 7"):
        load_dataset("json", data_files=str(files / "bad.jsonl"), split="train")
    assert CacheStore().ls() == []


def test_a_ragged_csv_row_is_named(files: Path) -> None:
    (files / "ragged.csv").write_text("id,text\n1,a\n2,b,extra\n")
    with pytest.raises(MalformedFileError, match=r"ragged\.csv.*line 3"):
        load_dataset("csv", data_files=str(files / "ragged.csv"), split="train")


def test_unknown_split_lists_the_known_ones(files: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown split 'validation'.*\['train'\]"):
        load_dataset("json", data_files=str(files / "rows.jsonl"), split="validation")


def test_arrow_files_written_by_save_to_disk_load_as_a_format(files: Path) -> None:
    Dataset.from_list(ROWS).save_to_disk(str(files / "saved"))
    ds = load_dataset("arrow", data_files=str(files / "saved" / "data-*.arrow"), split="train")
    assert ds.to_list() == ROWS


_CACHE_DIR_RUN = """
import sys
from pathlib import Path
from dagster_ds import Dataset, load_dataset

data, counter, *cache_dirs = sys.argv[1:]


def rows(n):
    with open(counter, "a") as file:  # one line per run of the generator
        file.write("ran\\n")
    yield from ({"i": i} for i in range(n))


for cache_dir in cache_dirs:
    ds = Dataset.from_generator(rows, gen_kwargs={"n": 3}, cache_dir=cache_dir)
    loaded = load_dataset("json", data_files=data, split="train", cache_dir=cache_dir)
    files = ds.cache_files + loaded.cache_files
    inside = [Path(f["filename"]).is_relative_to(cache_dir) for f in files]
    print(ds["i"][:], loaded["a"][:], inside)
"""


def test_cache_dir_is_reused_by_another_process_and_a_new_one_recomputes(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    data = tmp_path / "rows.jsonl"
    data.write_text('{"a": 1}\n{"a": 2}\n')
    counter = tmp_path / "runs.txt"

    def run(*cache_dirs: Path) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", _CACHE_DIR_RUN, str(data), str(counter), *map(str, cache_dirs)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()

    expected = "[0, 1, 2] [1, 2] [True, True]"
    assert run(tmp_path / "one") == [expected]
    assert counter.read_text().count("ran") == 1
    assert run(tmp_path / "one", tmp_path / "two") == [expected, expected]
    # The second process reused the rows in "one" and computed them again in "two" only.
    assert counter.read_text().count("ran") == 2
    assert any((tmp_path / "one").rglob("*.arrow"))
    default = Path(os.environ["DAGSTER_DS_CACHE"])
    assert not default.exists() or not any(default.rglob("*.arrow"))


def test_file_constructors_take_cache_dir(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("a\n1\n")
    ds = Dataset.from_csv(str(tmp_path / "a.csv"), cache_dir=str(tmp_path / "c"))
    assert ds["a"][:] == [1]
    assert all(Path(f["filename"]).is_relative_to(tmp_path / "c") for f in ds.cache_files)
    splits = DatasetDict.from_csv({"train": str(tmp_path / "a.csv")}, cache_dir=tmp_path / "d")
    files = splits["train"].cache_files
    assert files
    assert all(Path(f["filename"]).is_relative_to(tmp_path / "d") for f in files)

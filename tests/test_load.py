"""load_dataset over local files: formats, splits, caching and bad input."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dagster_ds import Dataset, DatasetDict, MalformedFileError
from dagster_ds.cache import CacheStore
from dagster_ds.formats._stat_records import DATABASE, RACY_NS
from dagster_ds.load import load_dataset
from tests import _fast

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
    import sys

    data = tmp_path / "rows.jsonl"
    data.write_text('{"a": 1}\n{"a": 2}\n')
    counter = tmp_path / "runs.txt"

    def run(*cache_dirs: Path) -> list[str]:
        done = _fast.run(  # a process of its own, forked from the warm server
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


_UNCHANGED_LOAD = """
import os, sys
from dagster_ds import load_dataset

data_files = sys.argv[1]
os.path.exists("/dagster-ds-mark-begin")  # seen by strace: the load happens between the marks
ds = load_dataset("json", data_files=data_files, split="train")
os.path.exists("/dagster-ds-mark-end")
print(ds.num_rows)
"""


def _load_in_a_new_process(data_files: str, trace: Path | None = None) -> int:
    import subprocess
    import sys

    # Traced, a cold start under strace; else forked from the warm server (its own process).
    prefix = ["strace", "-f", "-qq", "-o", str(trace)] if trace is not None else []
    done = (subprocess.run if prefix else _fast.run)(
        [*prefix, sys.executable, "-c", _UNCHANGED_LOAD, data_files],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def _calls_per_file(trace: Path, names: list[str]) -> dict[str, Counter[str]]:
    """``{name: {"stat": n, "open": n}}``: the calls naming each file between the two marks."""
    lines = trace.read_text().splitlines()
    begin = next(i for i, line in enumerate(lines) if "dagster-ds-mark-begin" in line)
    end = next(i for i, line in enumerate(lines) if "dagster-ds-mark-end" in line)
    call = re.compile(r'^\d+\s+(\w+)\(.*?"([^"]*)"')
    calls: dict[str, Counter[str]] = {name: Counter() for name in names}
    for line in lines[begin + 1 : end]:
        if (match := call.match(line)) is None:
            continue
        kind = "open" if "open" in match[1] else "stat" if "stat" in match[1] else None
        name = next((n for n in names if os.path.basename(match[2]).startswith(n)), None)
        if kind is not None and name is not None:
            calls[name][kind] += 1
    return calls


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
@pytest.mark.parametrize("pattern", ["data/*.jsonl", "data/**/*.jsonl", "data"])
def test_an_unchanged_source_costs_one_stat_per_file_and_no_open_in_a_new_process(
    tmp_path: Path, pattern: str
) -> None:
    """A rerun finds its files and their recorded digests with a stat each, reading none."""
    names = [f"part-{index:02}.jsonl" for index in range(36)]
    for index, name in enumerate(names):
        folder = tmp_path / "data" / ("sub" if index % 3 == 0 else "")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "data" / ".hidden.jsonl").write_text("")
    changed_ns = max(max(s.st_mtime_ns, s.st_ctime_ns) for s in map(os.stat, tmp_path.rglob("*")))
    while (left := changed_ns + RACY_NS - time.time_ns()) > 0:  # so the digests are trusted
        time.sleep(left / 1e9)
    data_files = str(tmp_path / pattern)
    expected = len(ROWS) * (24 if pattern == "data/*.jsonl" else 36)
    assert _load_in_a_new_process(data_files) == expected

    trace = tmp_path / "trace"
    assert _load_in_a_new_process(data_files, trace) == expected

    listed = [name for index, name in enumerate(names) if pattern != "data/*.jsonl" or index % 3]
    calls = _calls_per_file(trace, [*names, DATABASE])
    assert {name: calls[name]["stat"] for name in listed} == dict.fromkeys(listed, 1)
    assert {name: calls[name]["open"] for name in names} == dict.fromkeys(names, 0)
    # The digests' records are read at once: the database (and its journals) are not
    # stat'ed once per file.
    assert calls[DATABASE]["stat"] < len(listed) / 2


def test_a_stream_fingerprinted_after_its_file_changed_is_fingerprinted_by_it(
    tmp_path: Path,
) -> None:
    """A stream is fingerprinted when first asked: by its files then, not as resolved."""
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n')
    changed_ns = max(path.stat().st_mtime_ns, path.stat().st_ctime_ns)
    while (left := changed_ns + RACY_NS - time.time_ns()) > 0:  # its digest is remembered
        time.sleep(left / 1e9)
    before = load_dataset("json", data_files=str(path), split="train").fingerprint
    stream = load_dataset("json", data_files=str(path), split="train", streaming=True)
    path.write_text('{"a": 2}\n')

    assert stream.fingerprint != before
    assert (
        stream.fingerprint == load_dataset("json", data_files=str(path), split="train").fingerprint
    )
    assert list(stream) == [{"a": 2}]

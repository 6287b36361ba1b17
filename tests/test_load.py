"""load_dataset over local files: formats, splits, caching and bad input."""

from __future__ import annotations

import gzip
import json
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

"""Sources: data files in every format and shape, map-style datasets, generators, dicts."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from dagster_ds import (
    ClassLabel,
    Dataset,
    Features,
    IterableDataset,
    IterableDatasetDict,
    Value,
    load_dataset,
)
from dagster_ds.errors import ColumnNotFoundError, InvalidArgumentError
from dagster_ds.formats import ReadStats, write_batches

from .conftest import ROWS_PER_FILE, make_table

TABLE = make_table(0, 25)


@pytest.mark.parametrize(
    "suffix",
    [".parquet", ".jsonl", ".jsonl.gz", ".jsonl.bz2", ".jsonl.zst", ".jsonl.xz", ".csv", ".arrow"],
)
def test_every_format_streams_the_rows(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"data{suffix}"
    write_batches(TABLE.to_batches(max_chunksize=7), path)
    ds = load_dataset(suffix.split(".")[1], data_files=str(path), split="train", streaming=True)
    assert isinstance(ds, IterableDataset)
    assert list(ds) == TABLE.to_pylist()
    assert ds.column_names == TABLE.column_names


def test_text_files_stream_lines(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("first\nsecond\n")
    (tmp_path / "b.txt").write_text("third\n")
    ds = load_dataset("text", data_files=str(tmp_path / "*.txt"), split="train", streaming=True)
    assert [row["text"] for row in ds] == ["first", "second", "third"]
    assert ds.num_shards == 2


def test_a_folder_gives_one_shard_per_file(parquet_dir: Path) -> None:
    ds = load_dataset(str(parquet_dir), split="train", streaming=True)
    assert ds.num_shards == 3
    assert [row["id"] for row in ds] == list(range(3 * ROWS_PER_FILE))
    assert [row["id"] for row in ds.shard(3, 2)] == list(range(80, 120))


def test_data_files_as_glob_list_and_dict_of_splits(parquet_dir: Path) -> None:
    files = sorted(str(p) for p in parquet_dir.glob("*.parquet"))
    by_glob = load_dataset(
        "parquet", data_files=str(parquet_dir / "part-*.parquet"), split="train", streaming=True
    )
    by_list = load_dataset("parquet", data_files=files[:2], split="train", streaming=True)
    splits = load_dataset(
        "parquet", data_files={"train": files[:2], "test": files[2]}, streaming=True
    )
    assert isinstance(splits, IterableDatasetDict)
    assert sorted(splits) == ["test", "train"]
    assert splits.num_shards == {"train": 2, "test": 1}
    assert list(by_list) == list(splits["train"])
    assert len(list(by_glob)) == 120
    assert [row["id"] for row in splits["test"]] == list(range(80, 120))
    assert splits["test"].split == "test"
    mapped = splits.map(lambda x: {"twice": x["id"] * 2}).select_columns(["twice"])
    assert next(iter(mapped["test"])) == {"twice": 160}


def test_memory_urls_stream_too() -> None:
    root = f"memory://stream-{uuid.uuid4().hex[:8]}"
    try:
        write_batches(TABLE.to_batches(), f"{root}/a.parquet")
        write_batches(TABLE.to_batches(), f"{root}/b.jsonl.gz")
        parquet = load_dataset(
            "parquet", data_files=f"{root}/a.parquet", split="train", streaming=True
        )
        jsonl = load_dataset("json", data_files=f"{root}/b.jsonl.gz", split="train", streaming=True)
        assert list(parquet) == list(jsonl) == TABLE.to_pylist()
        assert len(parquet.fingerprint) == 32
    finally:
        fsspec.filesystem("memory").rm(root, recursive=True)


def test_nothing_is_read_until_iteration(tmp_path: Path) -> None:
    path = tmp_path / "late.jsonl"
    path.write_text('{"a": 1}\n')
    ds = load_dataset("json", data_files=str(path), split="train", streaming=True)
    ds = ds.map(lambda x: {"b": x["a"] + 1})
    path.write_text('{"a": 41}\n')
    assert list(ds) == [{"a": 41, "b": 42}]


def test_features_cast_every_batch(jsonl_dir: Path) -> None:
    features = Features(
        {
            "id": Value("int32"),
            "text": Value("string"),
            "label": ClassLabel(names=["x", "y", "z"]),
            "score": Value("float64"),
        }
    )
    ds = load_dataset(
        "json",
        data_files=str(jsonl_dir / "*.jsonl"),
        split="train",
        features=features,
        streaming=True,
    )
    assert ds.features == features
    first = next(iter(ds.with_format("arrow").iter(batch_size=5)))
    assert first.schema.field("id").type == pa.int32()


# -- Parquet pushdown ------------------------------------------------------------


def test_parquet_columns_are_the_only_ones_read(parquet_dir: Path) -> None:
    ds = load_dataset(
        "parquet",
        data_files=str(parquet_dir),
        split="train",
        streaming=True,
        columns=["score", "id"],
    )
    assert ds.column_names == ["score", "id"]
    assert next(iter(ds)) == {"score": 0.0, "id": 0}


def test_parquet_filters_skip_row_groups_by_statistics(parquet_dir: Path) -> None:
    stats = ReadStats()
    ds = load_dataset(
        "parquet",
        data_files=str(parquet_dir),
        split="train",
        streaming=True,
        filters=[("id", ">=", 95), ("id", "<", 102)],
        stats=stats,
    )
    assert [row["id"] for row in ds] == list(range(95, 102))
    # 3 files of 4 row groups of 10 rows: only rows 90-99 and 100-109 are read.
    assert stats.row_groups_total == 12
    assert stats.row_groups_read == 2
    assert stats.rows_read == 20


def test_parquet_filters_as_an_expression_with_columns(parquet_dir: Path) -> None:
    stats = ReadStats()
    ds = load_dataset(
        "parquet",
        data_files=str(parquet_dir),
        split="train",
        streaming=True,
        filters=pc.field("id") < 5,
        columns=["text"],
        stats=stats,
    )
    assert list(ds) == [{"text": f"row {i} " + "x" * (i % 7)} for i in range(5)]
    assert stats.row_groups_read == 1


def test_parquet_pushdown_survives_reshard_and_resume(parquet_dir: Path) -> None:
    stats = ReadStats()
    ds = load_dataset(
        "parquet",
        data_files=str(parquet_dir),
        split="train",
        streaming=True,
        filters=[("label", "=", 0)],
        stats=stats,
    ).reshard()
    assert ds.num_shards == 12
    full = [row["id"] for row in ds]
    assert full == [i for i in range(120) if i % 3 == 0]
    iterator = iter(ds)
    head = [next(iterator)["id"] for _ in range(13)]
    ds.load_state_dict(ds.state_dict())
    assert head + [row["id"] for row in ds] == full


def test_reshard_gives_one_shard_per_row_group(parquet_dir: Path) -> None:
    ds = load_dataset("parquet", data_files=str(parquet_dir), split="train", streaming=True)
    resharded = ds.reshard()
    assert (ds.num_shards, resharded.num_shards) == (3, 12)
    assert list(resharded) == list(ds)
    assert [row["id"] for row in resharded.shard(12, 5)] == list(range(50, 60))
    assert resharded.reshard().num_shards == 12


def test_reshard_keeps_other_formats_whole(jsonl_dir: Path) -> None:
    ds = load_dataset("json", data_files=str(jsonl_dir), split="train", streaming=True)
    assert ds.reshard().num_shards == ds.num_shards == 3


# -- map-style datasets ------------------------------------------------------------


def test_to_iterable_dataset_slices_the_table_without_copying() -> None:
    dataset = Dataset.from_dict({"a": list(range(10_000)), "b": [float(i) for i in range(10_000)]})
    stream = dataset.to_iterable_dataset(num_shards=4)
    assert stream.num_shards == 4
    assert stream.features == dataset.features
    buffer = dataset.data.column("a").chunks[0].buffers()[1]
    assert buffer is not None
    low, high = buffer.address, buffer.address + buffer.size
    for table in stream.with_format("arrow").iter(batch_size=500):
        values = table.column("a").chunk(0).buffers()[1]
        assert values is not None
        assert low <= values.address < high  # a view into the dataset's own buffer
    assert [row["a"] for row in stream] == list(range(10_000))


def test_to_iterable_dataset_follows_an_indices_mapping_and_keeps_the_format() -> None:
    dataset = Dataset.from_dict({"a": list(range(10))}).select([9, 2, 5, 5]).with_format("arrow")
    stream = dataset.to_iterable_dataset(num_shards=2)
    assert [t.to_pydict() for t in stream.iter(batch_size=2)] == [{"a": [9, 2]}, {"a": [5, 5]}]
    assert stream.fingerprint != dataset.fingerprint


def test_to_iterable_dataset_refuses_more_shards_than_rows() -> None:
    with pytest.raises(InvalidArgumentError, match="num_shards=5"):
        Dataset.from_dict({"a": [1, 2]}).to_iterable_dataset(num_shards=5)


def test_from_dict_and_from_list() -> None:
    by_dict = IterableDataset.from_dict({"a": [1, 2, 3]}, num_shards=3)
    by_list = IterableDataset.from_list([{"a": 1}, {"a": 2}, {"a": 3}], num_shards=3)
    assert list(by_dict) == list(by_list) == [{"a": 1}, {"a": 2}, {"a": 3}]
    assert by_dict.num_shards == by_dict.n_shards == 3
    assert by_dict.fingerprint == by_list.fingerprint


# -- generators ------------------------------------------------------------------


def _rows(files: list[str], prefix: str = "") -> Iterator[dict[str, Any]]:
    for name in files:
        for i in range(3):
            yield {"file": prefix + name, "i": i}


def test_from_generator_shards_list_kwargs() -> None:
    ds = IterableDataset.from_generator(
        _rows, gen_kwargs={"files": ["a", "b", "c", "d"], "prefix": "p-"}
    )
    assert ds.num_shards == 4
    assert [row["file"] for row in ds.shard(2, 1)] == ["p-c"] * 3 + ["p-d"] * 3
    assert [(r["file"], r["i"]) for r in ds.take(4)] == [
        ("p-a", 0),
        ("p-a", 1),
        ("p-a", 2),
        ("p-b", 0),
    ]
    assert sorted(r["file"] for r in ds.shuffle(seed=0, buffer_size=1)) == sorted(
        r["file"] for r in ds
    )


def test_from_generator_without_lists_is_one_shard_and_typed_by_features() -> None:
    features = Features({"file": Value("string"), "i": Value("int8")})
    ds = IterableDataset.from_generator(_rows, features=features, gen_kwargs={"files": ("a",)})
    assert ds.num_shards == 1
    assert ds.features == features
    table = next(iter(ds.with_format("arrow").iter(batch_size=3)))
    assert table.schema.field("i").type == pa.int8()


def test_from_generator_refuses_lists_of_different_lengths() -> None:
    with pytest.raises(InvalidArgumentError, match="different lengths"):
        IterableDataset.from_generator(_rows, gen_kwargs={"files": ["a"], "prefix": ["x", "y"]})


def test_from_generator_keeps_a_column_type_across_all_null_batches() -> None:
    def rows() -> Iterator[dict[str, Any]]:
        for i in range(2500):
            yield {"i": i, "maybe": "x" if i < 10 else None}

    ds = IterableDataset.from_generator(rows)
    types = {t.schema.field("maybe").type for t in ds.with_format("arrow").iter(batch_size=1000)}
    assert types == {pa.string()}


def test_unknown_columns_are_named_in_errors(parquet_dir: Path) -> None:
    ds = load_dataset("parquet", data_files=str(parquet_dir), split="train", streaming=True)
    with pytest.raises(ColumnNotFoundError, match="nope"):
        ds.select_columns(["nope"])
    with pytest.raises(ColumnNotFoundError, match=r"\['id', 'text', 'label', 'score'\]"):
        ds["nope"]


def test_class_labels_survive_a_parquet_round_trip(tmp_path: Path) -> None:
    features = Features({"label": ClassLabel(names=["neg", "pos"])})
    Dataset.from_dict({"label": [0, 1]}, features=features).to_iterable_dataset().to_parquet(
        str(tmp_path / "labels.parquet")
    )
    assert pq.read_table(tmp_path / "labels.parquet").num_rows == 2
    ds = load_dataset(
        "parquet", data_files=str(tmp_path / "labels.parquet"), split="train", streaming=True
    )
    assert ds.features == features


def test_a_parquet_stream_resumes_exactly_inside_and_between_row_groups(tmp_path: Path) -> None:
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": list(range(2500))}), path, row_group_size=300)
    for stop in (0, 1, 299, 300, 1234, 2499):
        stream: IterableDataset = load_dataset(
            "parquet", data_files=str(path), split="train", streaming=True
        )
        rows = iter(stream)
        head = [next(rows)["id"] for _ in range(stop)]
        state = stream.state_dict()
        del rows  # ends the iteration
        stream.load_state_dict(state)
        assert head + [row["id"] for row in stream] == list(range(2500))

"""Differential checks against the anchor: `datasets` reads what we write, and vice versa."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pyarrow as pa

from dagster_ds.formats import iter_batches, resolve_data_files, write_batches

from ._helpers import read_all

TABLE = pa.table(
    {
        "id": [1, 2, 3, 4],
        "score": [1.0, 2.5, None, -3.0],
        "text": ["plain", "comma, inside", 'quote " inside', "line\nbreak"],
        "flag": [True, False, True, False],
    }
)


def test_our_csv_and_json_are_byte_identical_to_the_anchors(
    datasets: ModuleType, tmp_path: Path
) -> None:
    anchor = datasets.Dataset.from_dict(TABLE.to_pydict())
    cases = [
        ("a.csv", {}, lambda path: anchor.to_csv(path)),
        ("indexed.csv", {"index": True}, lambda path: anchor.to_csv(path, index=True)),
        ("a.jsonl", {}, lambda path: anchor.to_json(path)),
        ("array.json", {"lines": False}, lambda path: anchor.to_json(path, lines=False)),
    ]
    for name, options, write_anchor in cases:
        ours, theirs = tmp_path / f"ours-{name}", tmp_path / f"anchor-{name}"
        write_batches(TABLE.to_batches(max_chunksize=2), ours, **options)
        write_anchor(str(theirs))
        assert ours.read_bytes() == theirs.read_bytes(), name


def test_anchor_reads_what_we_write(datasets: ModuleType, tmp_path: Path) -> None:
    cache = str(tmp_path / "hf-cache")
    for name in ["a.csv", "a.jsonl", "a.jsonl.gz", "a.parquet"]:
        path = str(tmp_path / name)
        write_batches(TABLE.to_batches(max_chunksize=3), path)
        builder = {"csv": "from_csv", "jsonl": "from_json", "parquet": "from_parquet"}
        read = getattr(datasets.Dataset, builder[name.split(".")[1]])
        assert read(path, cache_dir=cache).to_list() == TABLE.to_pylist(), name


def test_we_read_what_the_anchor_writes(datasets: ModuleType, tmp_path: Path) -> None:
    anchor = datasets.Dataset.from_dict(TABLE.to_pydict())
    anchor.to_csv(str(tmp_path / "a.csv"))
    anchor.to_json(str(tmp_path / "a.jsonl"))
    anchor.to_parquet(str(tmp_path / "a.parquet"))
    anchor.save_to_disk(str(tmp_path / "saved"))
    for name in ["a.csv", "a.jsonl", "a.parquet", "saved/data-00000-of-00001.arrow"]:
        result = read_all(iter_batches(str(tmp_path / name)))
        assert result.to_pylist() == TABLE.to_pylist(), name


def test_data_files_resolution_matches_the_anchor(datasets: ModuleType, tmp_path: Path) -> None:
    from datasets.data_files import DataFilesDict

    for name in [
        "data/train-0.jsonl",
        "data/train-1.jsonl",
        "data/test.jsonl",
        "data/sub/more.jsonl",
        "data/.hidden.jsonl",
        "data/.git/x.jsonl",
        "data/__pycache__/y.jsonl",
        "README.md",
    ]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")
    patterns = {"train": ["data/train-*.jsonl", "data/**/*.jsonl"], "test": "data/test.jsonl"}
    theirs = DataFilesDict.from_patterns(
        {k: v if isinstance(v, list) else [v] for k, v in patterns.items()},
        base_path=str(tmp_path),
    )
    ours = resolve_data_files(patterns, base_path=tmp_path)
    assert {split: [f.url for f in files] for split, files in ours.items()} == {
        split: list(dict.fromkeys(files)) for split, files in theirs.items()
    }

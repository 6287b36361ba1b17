"""A changed source is read, not loaded, to forecast the columns its next version records."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Any

import pytest

from dagster_ds.arrow import version_record
from dagster_ds.cache import CacheStore, cache_root
from dagster_ds.orchestration import dataset_source
from dagster_ds.orchestration._source_columns import source_columns
from dagster_ds.orchestration._source_versions import load_source
from tests.conftest import RunPython
from tests.orchestration.conftest import write_jsonl


def _part(folder: Path, index: int, label: int, rows: int) -> None:
    lines = [{"text": f"t{index}-{i}-" + "x" * 100, "label": label} for i in range(rows)]
    write_jsonl(folder / f"part-{index}.jsonl", lines)


def _files(folder: Path) -> dict[str, str]:
    return {
        str(path): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _columns(record: dict[str, Any]) -> list[Any]:
    """Each shard's table key and the column fingerprints its entry records."""
    entries = record["entries"]
    return [
        (shard["table"], entries[shard["table"]]["metadata"]["column_fingerprints"])
        for shard in record["shards"]
    ]


@pytest.mark.parametrize(
    ("rows", "edit", "read"),
    [
        (9_000, "label", 1),  # files over the shard size, a shard each: the edited one is read
        (10, "append", 4),  # small files, one shard: an appended file reads the group's files
    ],
)
def test_a_forecast_records_the_columns_loading_then_records_reading_only_changed_shards(
    tmp_path: Path, rows: int, edit: str, read: int
) -> None:
    folder, store = tmp_path / "data", CacheStore(str(tmp_path / "store"))
    for index in range(3):
        _part(folder, index, 0, rows)
    source = dataset_source("raw", "json", data_files=str(folder / "*.jsonl"))
    spec: Any = getattr(source.observe_fn, "dagster_ds_spec")  # noqa: B009
    with cache_root(store.root):
        load_source(spec)
    if edit == "label":
        _part(folder, 1, 1, rows)
    else:
        _part(folder, 3, 0, rows)
    before = _files(tmp_path / "store")

    with cache_root(tempfile.mkdtemp(dir=tmp_path)):
        forecast = source_columns(store, spec)

    assert forecast is not None
    assert _files(tmp_path / "store") == before  # nothing written to the store
    assert forecast.files_read == read
    with cache_root(store.root):
        load_source(spec)
    loaded = version_record(store, forecast.key)
    assert loaded is not None  # the key loading stores the version under
    assert _columns(forecast.metadata) == _columns(loaded)


def test_a_forecast_reads_as_much_of_the_store_whatever_the_number_of_unchanged_shards(
    tmp_path: Path, run_python: RunPython
) -> None:
    """The unchanged shards' column fingerprints come from the source's last version (one
    record), not from a manifest per shard: at 1,000 shards on an object store, 1,000 GETs."""
    opened: dict[int, int] = {}
    for shards in (3, 9):
        folder, store = tmp_path / f"data-{shards}", tmp_path / f"store-{shards}"
        for index in range(shards):
            _part(folder, index, 0, 9_000)
        source = dataset_source("raw", "json", data_files=str(folder / "*.jsonl"))
        spec: Any = getattr(source.observe_fn, "dagster_ds_spec")  # noqa: B009
        with cache_root(str(store)):
            load_source(spec)
        _part(folder, 1, 1, 9_000)
        printed = run_python(
            f"""
            import sys, tempfile
            from dagster_ds.cache import CacheStore, cache_root
            from dagster_ds.orchestration import dataset_source
            from dagster_ds.orchestration._source_columns import source_columns
            source = dataset_source("raw", "json", data_files={str(folder / "*.jsonl")!r})
            spec = getattr(source.observe_fn, "dagster_ds_spec")
            store = CacheStore({str(store)!r})
            opened = []
            sys.addaudithook(
                lambda event, args: opened.append(args[0])
                if event == "open" and str(args[0]).startswith({str(store)!r}) else None
            )
            with cache_root(tempfile.mkdtemp()):
                forecast = source_columns(store, spec)
            assert forecast is not None and forecast.files_read == 1
            print(len(opened))
            """
        )
        opened[shards] = int(printed)
    assert opened[9] == opened[3], opened

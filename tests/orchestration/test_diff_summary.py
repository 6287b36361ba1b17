"""Every materialization of a dataset asset records what changed since the previous version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg

from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source
from tests.orchestration.conftest import latest, metadata_value, write_jsonl

NUMERIC = {
    "dagster_ds/rows_added": dg.IntMetadataValue,
    "dagster_ds/rows_removed": dg.IntMetadataValue,
    "dagster_ds/columns_changed": dg.IntMetadataValue,
    "dagster_ds/shards_reused": dg.IntMetadataValue,
    "dagster_ds/shards_new": dg.IntMetadataValue,
    "dagster_ds/seconds_saved": dg.FloatMetadataValue,
}


def _shard(folder: Path, index: int, rows: list[dict[str, Any]]) -> None:
    write_jsonl(folder / f"part-{index:02d}.jsonl", rows)


def _summary(instance: dg.DagsterInstance, key: str) -> dict[str, Any]:
    materialization = latest(instance, key)
    for name, kind in NUMERIC.items():  # numbers, so that Dagster plots them
        assert isinstance(materialization.metadata[name], kind), name
    return {
        name.removeprefix("dagster_ds/"): metadata_value(materialization, name) for name in NUMERIC
    }


def test_each_refresh_records_rows_added_removed_columns_changed_and_reuse(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    data = tmp_path / "data"
    for index in range(4):
        _shard(data, index, [{"n": 10 * index + j, "word": "w"} for j in range(5)])
    numbers = dataset_source(
        "numbers", "json", data_files=str(data / "*.jsonl"), reader_options={"shard_bytes": None}
    )

    @dataset_asset
    def doubled(numbers: Dataset) -> Dataset:
        return numbers.map(lambda row: {"double": row["n"] * 2})

    def refresh() -> dict[str, Any]:
        result = dg.materialize(
            [numbers, doubled],
            instance=instance,
            resources={"io_manager": DatasetIOManager(base_dir=str(tmp_path / "store"))},
            selection=[doubled],
        )
        assert result.success
        return _summary(instance, "doubled")

    first = refresh()
    assert first["rows_added"] == 20
    assert (first["rows_removed"], first["columns_changed"]) == (0, 0)
    assert (first["shards_reused"], first["shards_new"]) == (0, 4)
    assert first["seconds_saved"] == 0.0

    # One row of one file changes: one shard is computed, three are reused.
    _shard(data, 2, [{"n": 20 + j, "word": "changed" if j == 1 else "w"} for j in range(5)])
    edited = refresh()
    assert (edited["rows_added"], edited["rows_removed"], edited["columns_changed"]) == (1, 1, 1)
    assert (edited["shards_reused"], edited["shards_new"]) == (3, 1)
    assert edited["seconds_saved"] > 0
    assert "word (1)" in str(metadata_value(latest(instance, "doubled"), "dagster_ds/diff"))

    # A file appended: its rows are added, nothing removed or changed.
    _shard(data, 4, [{"n": 40 + j, "word": "w"} for j in range(3)])
    appended = refresh()
    assert (appended["rows_added"], appended["rows_removed"]) == (3, 0)
    assert appended["columns_changed"] == 0
    assert (appended["shards_reused"], appended["shards_new"]) == (4, 1)

    # Nothing changed: the step skips, and says that nothing changed in numbers too.
    skipped = refresh()
    assert (skipped["rows_added"], skipped["rows_removed"], skipped["columns_changed"]) == (0, 0, 0)
    assert (skipped["shards_reused"], skipped["shards_new"]) == (5, 0)
    assert skipped["seconds_saved"] >= appended["seconds_saved"] > 0


def test_a_schema_change_counts_the_columns_added_and_removed(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    data = write_jsonl(tmp_path / "n.jsonl", [{"n": 1}, {"n": 2}])
    numbers = dataset_source("numbers", "json", data_files=str(data))
    resources = {"io_manager": DatasetIOManager(base_dir=str(tmp_path / "store"))}

    @dataset_asset(name="shaped")
    def before(numbers: Dataset) -> Dataset:
        return numbers.map(lambda row: {"half": row["n"] / 2})

    @dataset_asset(name="shaped")
    def after(numbers: Dataset) -> Dataset:
        return numbers.map(lambda row: {"label": str(row["n"])}, remove_columns=[])

    for definition in (before, after):
        result = dg.materialize(
            [numbers, definition], instance=instance, resources=resources, selection=[definition]
        )
        assert result.success
    summary = _summary(instance, "shaped")
    assert (summary["rows_added"], summary["rows_removed"]) == (0, 0)
    assert summary["columns_changed"] == 2  # half removed, label added
    text = str(metadata_value(latest(instance, "shaped"), "dagster_ds/diff"))
    assert "+label" in text
    assert "-half" in text

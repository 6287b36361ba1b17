"""Column lineage of dataset assets: dagster/column_lineage and its Markdown table, in real runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg

from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source
from tests.orchestration.conftest import latest, metadata_value, write_jsonl


def _label_id(label: str) -> dict[str, Any]:
    return {"label_id": {"neg": 0, "pos": 1}[label]}


def _pipeline(tmp_path: Path) -> list[Any]:
    rows = [{"text": "good", "label": "pos"}, {"text": "bad", "label": "neg"}]
    source = dataset_source(
        "source", "json", data_files=str(write_jsonl(tmp_path / "s.jsonl", rows))
    )

    @dataset_asset
    def labelled(source: Dataset) -> Dataset:
        return source.map(_label_id, input_columns=["label"])

    @dataset_asset
    def stats(labelled: Dataset) -> Dataset:
        return labelled.rename_column("label_id", "class_id").select_columns(["text", "class_id"])

    return [source, labelled, stats]


def _pairs(materialization: dg.AssetMaterialization) -> dict[str, set[tuple[str, str]]]:
    lineage = metadata_value(materialization, "dagster/column_lineage")
    assert isinstance(lineage, dg.TableColumnLineage)
    return {
        column: {(dep.asset_key.to_user_string(), dep.column_name) for dep in deps}
        for column, deps in lineage.deps_by_column.items()
    }


def test_each_dataset_asset_records_the_upstream_columns_of_each_output_column(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    assets = _pipeline(tmp_path)
    for _ in range(2):  # the second run skips every function: the lineage is said again
        result = dg.materialize(
            assets,
            instance=instance,
            resources={"io_manager": DatasetIOManager(base_dir=str(tmp_path / "store"))},
        )
        assert result.success

    assert _pairs(latest(instance, "labelled")) == {
        "text": {("source", "text")},
        "label": {("source", "label")},
        "label_id": {("source", "label")},
    }
    assert _pairs(latest(instance, "stats")) == {
        "text": {("labelled", "text")},
        "class_id": {("labelled", "label_id")},
    }
    table = str(metadata_value(latest(instance, "stats"), "dagster_ds/column_lineage"))
    assert r"| class\_id | labelled.label\_id | rename\_columns |" in table
    assert "| text | labelled.text | (passed through) |" in table
    labelled = str(metadata_value(latest(instance, "labelled"), "dagster_ds/column_lineage"))
    assert r"| label\_id | source.label | map |" in labelled

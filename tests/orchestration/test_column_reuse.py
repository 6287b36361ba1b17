"""An asset with declared hidden inputs never reuses outputs by their read columns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg

from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source
from tests.orchestration.conftest import write_jsonl


def _rows(edit_label: bool) -> list[dict[str, Any]]:
    return [{"text": f"t{i}", "label": int(edit_label and i == 0)} for i in range(4)]


def test_declared_hidden_inputs_turn_reuse_by_columns_off(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    data = write_jsonl(tmp_path / "rows.jsonl", _rows(edit_label=False))
    suffix = tmp_path / "suffix.txt"
    suffix.write_text("a")
    rows = dataset_source("rows", "json", data_files=str(data))
    path, counter = str(suffix), str(tmp_path / "calls.txt")

    @dataset_asset(fingerprint_inputs=[path])
    def suffixed(rows: Dataset) -> Dataset:
        def add(batch: dict[str, list[Any]]) -> dict[str, list[str]]:
            with open(path) as file:  # a hidden input, declared on the asset
                end = file.read()
            with open(counter, "a") as calls:
                calls.write(end)
            return {"suffixed": [text + end for text in batch["text"]]}

        return rows.map(add, batched=True)

    def materialize() -> str:
        """What the map function read of the hidden input, call by call."""
        result = dg.materialize(
            [rows, suffixed],
            instance=instance,
            resources={"io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage"))},
        )
        assert result.success
        return Path(counter).read_text()

    materialize()
    # The file changes, and so does a column the map does not read: its shard key is new,
    # and reuse by read columns would give the old suffix.
    suffix.write_text("b")
    write_jsonl(data, _rows(edit_label=True))
    assert materialize() == "ab"  # computed again, with the new suffix

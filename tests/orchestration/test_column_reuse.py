"""An asset with declared hidden inputs never reuses outputs by their read columns."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
from click.testing import CliRunner

from dagster_ds import Dataset, load_dataset
from dagster_ds.cli import main
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source
from tests.orchestration._chain import (
    correct_labels,
    record,
    text_and_label_assets,
    write_label_files,
)
from tests.orchestration.conftest import latest, write_jsonl


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


def test_a_label_correction_reruns_the_label_asset_only_on_its_shard(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    folder = tmp_path / "data"
    for index in range(3):
        rows = [{"text": f"t{index}-{i}", "label": i % 2} for i in range(5)]
        write_jsonl(folder / f"part-{index}.jsonl", rows)
    raw, lengths = text_and_label_assets(sorted(str(p) for p in folder.glob("*.jsonl")))

    @dataset_asset
    def named(lengths: Dataset) -> Dataset:
        def label_name(batch: dict[str, list[Any]]) -> dict[str, list[str]]:
            record(f"label_name:{len(batch['label'])}")
            return {"name": ["pos" if label else "neg" for label in batch["label"]]}

        return lengths.map(label_name, batched=True)

    def materialize() -> list[str]:
        """The map calls of this run."""
        before = len(body_calls())
        result = dg.materialize(
            [raw, lengths, named],
            instance=instance,
            resources={"io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage"))},
        )
        assert result.success
        return [call for call in body_calls()[before:] if ":" in call]

    assert sorted(materialize()) == ["label_name:5"] * 3 + ["n_chars:5"] * 3
    correct_labels(folder)
    assert materialize() == ["label_name:5"]  # n_chars reads only text: reused

    metadata = latest(instance, "lengths").metadata
    assert metadata["dagster_ds/shards_reused_by_columns"].value == 1
    assert "'n_chars' reads only 'text': reused 1 of 1 changed shards (3 in all)" in str(
        metadata["dagster_ds/changed"].value
    )


def test_a_label_correction_is_said_by_column_in_the_run_and_in_hash_explain(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    folder = tmp_path / "data"
    for index in range(3):
        rows = [{"text": f"t{index}-{i}", "label": i % 2} for i in range(5)]
        write_jsonl(folder / f"part-{index}.jsonl", rows)
    files = sorted(str(path) for path in folder.glob("*.jsonl"))
    storage = tmp_path / "storage"

    @dataset_asset(fingerprint_inputs=files)
    def raw() -> Dataset:
        return load_dataset("json", data_files=files, split="train", shard_bytes=0)

    @dataset_asset
    def lengths(raw: Dataset) -> Dataset:
        def n_chars(batch: dict[str, list[Any]]) -> dict[str, list[int]]:
            return {"n_chars": [len(text) for text in batch["text"]]}

        return raw.map(n_chars, batched=True)

    @dataset_asset
    def named(lengths: Dataset) -> Dataset:
        def label_name(batch: dict[str, list[Any]]) -> dict[str, list[str]]:
            return {"name": ["pos" if label else "neg" for label in batch["label"]]}

        return lengths.map(label_name, batched=True)

    def materialize() -> str:
        """The run's id."""
        result = dg.materialize(
            [raw, lengths, named],
            instance=instance,
            resources={"io_manager": DatasetIOManager(base_dir=str(storage))},
        )
        assert result.success
        return result.run_id

    materialize()
    first = str(latest(instance, "lengths").metadata["dagster_ds/recipe"].value)
    correct_labels(folder)
    run_id = materialize()

    said = "parent 'raw': column 'label' changed in 1 of 3 shards"
    changed = str(latest(instance, "lengths").metadata["dagster_ds/changed"].value)
    reused = "'n_chars' reads only 'text': reused 1 of 1 changed shards (3 in all)"
    assert said in changed
    assert reused in changed
    assert changed.index(said) < changed.index(reused)
    # Downstream, the label column kept by the map is said changed too.
    named_changed = str(latest(instance, "named").metadata["dagster_ds/changed"].value)
    assert "parent 'lengths': column 'label' changed in 1 of 3 shards" in named_changed
    # label_name reads the changed column: nothing reused, so nothing is claimed for it.
    assert "'label_name'" not in named_changed
    logs = [
        entry.user_message
        for entry in instance.all_logs(run_id)
        if entry.user_message.startswith("Ran lengths because")
    ]
    assert len(logs) == 1
    assert said in logs[0]

    second = str(latest(instance, "lengths").metadata["dagster_ds/recipe"].value)
    explained = CliRunner().invoke(
        main, ["hash", "explain", first[:12], second[:12], "--store", str(storage)]
    )
    assert explained.exit_code == 0, explained.output
    assert f"  - {said}" in explained.stdout.splitlines()


def test_a_parent_in_another_store_is_named_by_column_and_reused_like_one_in_the_same_store(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    folder = tmp_path / "data"
    files = write_label_files(folder)
    # raw is stored in its own store: lengths adopts its shards into lengths's store.
    resources = {
        "io_manager": DatasetIOManager(base_dir=str(tmp_path / "lengths-store")),
        "raw_store": DatasetIOManager(base_dir=str(tmp_path / "raw-store")),
    }

    def materialize() -> str:
        assets = text_and_label_assets(files, raw_io_manager_key="raw_store")
        assert dg.materialize(assets, instance=instance, resources=resources).success
        return str(latest(instance, "lengths").metadata["dagster_ds/changed"].value)

    materialize()
    first = str(latest(instance, "lengths").metadata["dagster_ds/recipe"].value)
    correct_labels(folder)
    calls = len(body_calls())
    changed = materialize()

    said = "parent 'raw': column 'label' changed in 1 of 3 shards"
    assert [call for call in body_calls()[calls:] if call.startswith("n_chars")] == []
    assert said in changed
    assert "'n_chars' reads only 'text': reused 1 of 1 changed shards (3 in all)" in changed
    second = str(latest(instance, "lengths").metadata["dagster_ds/recipe"].value)
    store = str(tmp_path / "lengths-store")
    explained = CliRunner().invoke(
        main, ["hash", "explain", first[:12], second[:12], "--store", store]
    )
    assert explained.exit_code == 0, explained.output
    assert f"  - {said}" in explained.stdout.splitlines()

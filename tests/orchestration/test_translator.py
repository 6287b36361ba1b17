"""DatasetTranslator: keys, groups, descriptions, tags and automation; decorator arguments win."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from dagster_ds import Dataset
from dagster_ds.orchestration import (
    DatasetAssetProps,
    DatasetIOManager,
    DatasetTranslator,
    dataset_asset,
    dataset_source,
    fingerprint_changed,
)


class TeamTranslator(DatasetTranslator):
    def get_asset_key(self, props: DatasetAssetProps) -> dg.AssetKey:
        return dg.AssetKey(["team", props.name])

    def get_group_name(self, props: DatasetAssetProps) -> str | None:
        return f"{props.kind}s"

    def get_description(self, props: DatasetAssetProps) -> str | None:
        return f"[{props.kind}] {super().get_description(props)}"

    def get_tags(self, props: DatasetAssetProps) -> dict[str, str]:
        return {"team": "text", "kind": props.kind}

    def get_automation_condition(self, props: DatasetAssetProps) -> dg.AutomationCondition | None:
        return fingerprint_changed() if props.kind == "asset" else None


TEAM = TeamTranslator()


def _spec(asset: dg.AssetsDefinition) -> dg.AssetSpec:
    (spec,) = asset.specs
    return spec


def test_the_default_translator_keeps_the_decorator_defaults() -> None:
    @dataset_asset
    def lowered(docs: Dataset) -> Dataset:
        """Lowercased text."""
        return docs

    spec = _spec(lowered)
    assert spec.key == dg.AssetKey("lowered")
    assert spec.group_name == "default"
    assert spec.description == "Lowercased text."
    assert spec.automation_condition is None
    assert [dep.asset_key for dep in spec.deps] == [dg.AssetKey("docs")]


def test_a_translator_names_groups_describes_tags_and_automates() -> None:
    @dataset_asset(translator=TEAM)
    def lowered(docs: Dataset) -> Dataset:
        """Lowercased text."""
        return docs

    spec = _spec(lowered)
    assert spec.key == dg.AssetKey(["team", "lowered"])
    assert [dep.asset_key for dep in spec.deps] == [dg.AssetKey(["team", "docs"])]  # upstream too
    assert spec.group_name == "assets"
    assert spec.description == "[asset] Lowercased text."
    assert spec.tags == {"team": "text", "kind": "asset"}
    assert spec.automation_condition is not None
    assert spec.automation_condition.get_label() == "fingerprint_changed"

    source = dataset_source("docs", "json", data_files="docs.jsonl", translator=TEAM)
    assert source.key == dg.AssetKey(["team", "docs"])
    assert source.group_name == "sources"
    assert source.description is not None
    assert source.description.startswith("[source] Dataset source: 'json'")


def test_the_decorator_arguments_override_the_translator() -> None:
    eager = dg.AutomationCondition.eager()

    @dataset_asset(
        translator=TEAM,
        name="lower",
        key_prefix="mine",
        group_name="text",
        description="Mine.",
        tags={"kind": "override"},
        automation_condition=eager,
    )
    def lowered(docs: Dataset) -> Dataset:
        return docs

    spec = _spec(lowered)
    assert spec.key == dg.AssetKey(["mine", "lower"])
    assert spec.group_name == "text"
    assert spec.description == "Mine."
    assert spec.tags == {"team": "text", "kind": "override"}  # per tag, the argument wins
    assert spec.automation_condition is eager

    source = dataset_source(
        "docs", "json", data_files="docs.jsonl", translator=TEAM, key_prefix=[], group_name="raw"
    )
    assert source.key == dg.AssetKey("docs")
    assert source.group_name == "raw"


def test_translated_keys_materialize(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path
) -> None:
    docs = dataset_source("docs", "json", data_files=str(corpus), translator=TEAM)

    @dataset_asset(translator=TEAM)
    def lowered(docs: Dataset) -> Dataset:
        return docs.map(lambda row: {"text": row["text"].lower()})

    resources = {"io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage"))}
    assert dg.materialize([docs, lowered], instance=instance, resources=resources).success
    event = instance.get_latest_materialization_event(dg.AssetKey(["team", "lowered"]))
    assert event is not None

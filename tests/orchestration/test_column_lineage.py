"""Column lineage of dataset assets: dagster/column_lineage and its Markdown table, in real runs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from huggingface_hub import HfApi

from dagster_ds import Dataset
from dagster_ds.hub import Card
from dagster_ds.orchestration import (
    DatasetIOManager,
    HubResource,
    HubTarget,
    dataset_asset,
    dataset_source,
)
from dagster_ds.testing import LocalHubServer
from tests.orchestration.conftest import latest, metadata_value, write_jsonl

REPO = "user/stats"


def _label_id(label: str) -> dict[str, Any]:
    return {"label_id": {"neg": 0, "pos": 1}[label]}


def _pipeline(tmp_path: Path, push: HubTarget | None = None) -> list[Any]:
    rows = [{"text": "good", "label": "pos"}, {"text": "bad", "label": "neg"}]
    source = dataset_source(
        "source", "json", data_files=str(write_jsonl(tmp_path / "s.jsonl", rows))
    )

    @dataset_asset
    def labelled(source: Dataset) -> Dataset:
        return source.map(_label_id, input_columns=["label"])

    @dataset_asset(push_to_hub=push)
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


def _push(tmp_path: Path, instance: dg.DagsterInstance, hub: LocalHubServer) -> None:
    assets = _pipeline(tmp_path, push=HubTarget(REPO, split="train"))
    resources = {
        "io_manager": DatasetIOManager(base_dir=str(tmp_path / "store")),
        "hub": HubResource(endpoint=hub.endpoint, token="hf_any"),
    }
    assert dg.materialize(assets, instance=instance, resources=resources).success


def test_the_card_of_a_push_carries_the_column_sources_of_each_step(
    tmp_path: Path, instance: dg.DagsterInstance, local_hub: LocalHubServer
) -> None:
    _push(tmp_path, instance, local_hub)
    api = HfApi(endpoint=local_hub.endpoint, token="hf_any")
    readme = api.hf_hub_download(REPO, "README.md", repo_type="dataset")
    steps = Card.parse(Path(readme).read_text()).lineages()["default", "train"]
    by_transform = {step.transform: step.column_sources() for step in steps}
    assert by_transform["map"] == {
        "text": ("text",),
        "label": ("label",),
        "label_id": ("label",),
    }
    assert by_transform["rename_columns"] == {
        "text": ("text",),
        "label": ("label",),
        "class_id": ("label_id",),
    }
    assert steps[-1].transform == "dataset_asset:stats"
    assert steps[-1].column_sources() == {"text": ("text",), "class_id": ("label_id",)}


@pytest.mark.browser
def test_the_local_hub_shows_the_column_lineage_of_a_pushed_asset_in_a_browser(
    tmp_path: Path, instance: dg.DagsterInstance, local_hub: LocalHubServer
) -> None:
    _push(tmp_path, instance, local_hub)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "headless Chromium is not installed: apt-get install -y chromium"
    page = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'chromium'}",
            "--dump-dom",
            f"{local_hub.endpoint}/datasets/{REPO}/lineage",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert page.returncode == 0, page.stderr[-2000:]
    rows = [
        row.replace("</td><td>", " | ").removeprefix("<tr><td>").removesuffix("</td></tr>")
        for row in page.stdout.split("<tbody>")[-1].replace("</tr>", "</tr>\n").splitlines()
        if row.startswith("<tr><td>")
    ]
    assert rows == [
        "text | ← labelled.text | (passed through)",
        "class_id | ← labelled.label_id | rename_columns",
    ]

"""dagster-ds rollback: an earlier stored version becomes the latest, by metadata only."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest
from click.testing import CliRunner, Result
from huggingface_hub import HfApi

from dagster_ds import Dataset, load_dataset
from dagster_ds.cli import main
from dagster_ds.orchestration import (
    DatasetIOManager,
    DatasetStore,
    HubResource,
    dataset_asset,
    dataset_source,
)
from dagster_ds.testing import LocalHubServer
from tests.orchestration.conftest import data_version, latest, metadata_value, write_jsonl

REPO = "user/numbers"
TOKEN = "hf_rollback_secret_token"


def _assets(data: Path, *, push: bool = False) -> list[dg.AssetsDefinition | dg.SourceAsset]:
    numbers = dataset_source("numbers", "json", data_files=str(data))

    @dataset_asset(push_to_hub=REPO if push else None)
    def doubled(numbers: Dataset) -> Dataset:
        return numbers.map(lambda example: {"twice": example["n"] * 2})

    @dataset_asset
    def total(doubled: Dataset) -> Dataset:
        return Dataset.from_dict({"sum": [sum(doubled["twice"])]})

    return [numbers, doubled, total]


def _rollback(home: Path, storage: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(
        main,
        ["rollback", *args, "--store", str(storage)],
        env={"DAGSTER_HOME": str(home), **(env or {})},
    )


def _version(instance: dg.DagsterInstance, asset: str) -> tuple[str, str]:
    materialization = latest(instance, asset)
    return (
        metadata_value(materialization, "dagster_ds/recipe"),
        metadata_value(materialization, "dagster_ds/data_version"),
    )


def test_a_rollback_makes_an_earlier_version_latest_and_its_children_follow(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    dagster_home: Path,
    body_calls: Callable[[], list[str]],
) -> None:
    data, storage = tmp_path / "numbers.jsonl", tmp_path / "store"
    resources = {"io_manager": DatasetIOManager(base_dir=str(storage))}
    write_jsonl(data, [{"n": n} for n in range(10)])
    assert dg.materialize(_assets(data), instance=instance, resources=resources).success
    first_recipe, first_data = _version(instance, "doubled")
    first_total = data_version(instance, "total")
    write_jsonl(data, [{"n": n} for n in range(20)])
    assert dg.materialize(_assets(data), instance=instance, resources=resources).success
    second_recipe, _ = _version(instance, "doubled")
    assert second_recipe != first_recipe
    files_before = sorted(str(path) for path in storage.rglob("*") if path.is_file())

    result = _rollback(dagster_home, storage, "doubled", first_data[:10])

    assert result.exit_code == 0, result.output
    assert f"rolled back from {second_recipe} to {first_recipe}" in result.output
    rolled = latest(instance, "doubled")
    assert (rolled.tags or {})["dagster/data_version"] == first_data
    assert "dagster_ds/rollback" in (rolled.tags or {})
    assert metadata_value(rolled, "dagster_ds/changed") == (
        f"rolled back from {second_recipe} to {first_recipe}"
    )
    assert metadata_value(rolled, "dagster/row_count") == 10
    # Nothing was copied or written in the store: a rollback is metadata.
    assert sorted(str(path) for path in storage.rglob("*") if path.is_file()) == files_before
    # The child reads the rolled-back rows: its recipe is the first run's again, so it is
    # found stored and not computed.
    calls_before = len(body_calls())
    total = [asset for asset in _assets(data) if asset.key == dg.AssetKey("total")]
    assert dg.materialize(
        _assets(data), instance=instance, resources=resources, selection=total
    ).success
    assert data_version(instance, "total") == first_total
    assert len(body_calls()) == calls_before

    # Retention keeps the rolled-back version: it is the latest the instance records.
    _gc(dagster_home, storage)
    store = DatasetStore(str(storage))
    kept = {v["fingerprint"] for v in store.versions(dg.AssetKey("doubled"))}
    assert first_recipe in kept
    assert store.load(dg.AssetKey("doubled"), first_recipe)["twice"] == [2 * n for n in range(10)]

    # A version gc removed cannot be rolled back to: the error names it.
    write_jsonl(data, [{"n": n} for n in range(30)])
    assert dg.materialize(_assets(data), instance=instance, resources=resources).success
    _gc(dagster_home, storage)
    assert first_recipe not in {v["fingerprint"] for v in store.versions(dg.AssetKey("doubled"))}
    before = latest(instance, "doubled")
    gone = _rollback(dagster_home, storage, "doubled", first_recipe[:8])
    assert gone.exit_code != 0
    assert f"Version {first_recipe} of asset 'doubled' is no longer in the store" in gone.output
    assert latest(instance, "doubled") == before  # nothing recorded


def _gc(home: Path, storage: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["cache", "gc", "--store", str(storage), "--keep-versions", "1", "--max-size", "0"],
        env={"DAGSTER_HOME": str(home)},
    )
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("abc", "give at least 6 characters"),
        ("ffffffffff", "records a version whose recipe or content fingerprint starts with"),
    ],
)
def test_a_bad_reference_is_refused_and_nothing_is_recorded(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    dagster_home: Path,
    reference: str,
    message: str,
) -> None:
    data, storage = tmp_path / "numbers.jsonl", tmp_path / "store"
    write_jsonl(data, [{"n": n} for n in range(3)])
    resources = {"io_manager": DatasetIOManager(base_dir=str(storage))}
    assert dg.materialize(_assets(data), instance=instance, resources=resources).success
    before = latest(instance, "doubled")

    result = _rollback(dagster_home, storage, "doubled", reference)

    assert result.exit_code != 0
    assert message in result.output
    assert latest(instance, "doubled") == before


def test_a_rollback_of_a_pushed_asset_republishes_that_version_in_one_commit(
    tmp_path: Path, instance: dg.DagsterInstance, dagster_home: Path
) -> None:
    data, storage = tmp_path / "numbers.jsonl", tmp_path / "store"
    with LocalHubServer(tmp_path / "hub") as hub:
        api = HfApi(endpoint=hub.endpoint, token="reader")
        resources = {
            "io_manager": DatasetIOManager(base_dir=str(storage)),
            "hub": HubResource(endpoint=hub.endpoint, token=TOKEN),
        }
        for rows in (4, 6):
            write_jsonl(data, [{"n": n} for n in range(rows)])
            assert dg.materialize(
                _assets(data, push=True), instance=instance, resources=resources
            ).success
        first = next(
            record.asset_materialization
            for record in instance.fetch_materializations(dg.AssetKey("doubled"), limit=2).records
            if record.asset_materialization is not None
            and metadata_value(record.asset_materialization, "dagster/row_count") == 4
        )
        first_recipe = metadata_value(first, "dagster_ds/recipe")
        commits_before = len(api.list_repo_commits(REPO, repo_type="dataset"))

        result = _rollback(
            dagster_home, storage, "doubled", first_recipe[:8], env={"HF_TOKEN": TOKEN}
        )

        assert result.exit_code == 0, result.output
        assert TOKEN not in result.output
        commits = api.list_repo_commits(REPO, repo_type="dataset")
        assert len(commits) == commits_before + 1
        assert commits[0].title == f"Rollback doubled to {first_recipe[:12]}"
        rolled = latest(instance, "doubled")
        assert metadata_value(rolled, "dagster_ds/hub_commit") == commits[0].commit_id
        pushed = load_dataset(REPO, split="train", endpoint=hub.endpoint, token="reader")
        assert sorted(pushed["twice"]) == [2 * n for n in range(4)]

"""Promote: a version computed in development is shipped to production without recomputing."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pytest

from dagster_ds import Dataset
from dagster_ds.errors import OrchestrationError
from dagster_ds.orchestration import (
    DatasetIOManager,
    DatasetStore,
    dataset_asset,
    dataset_source,
    plan_promotion,
    promote,
)
from tests import _fast
from tests.conftest import REPO_ROOT, new_dagster_home
from tests.orchestration._chain import (
    correct_labels,
    record,
    text_and_label_assets,
    text_and_label_filter_assets,
    write_label_files,
)
from tests.orchestration.conftest import latest, metadata_value, write_jsonl


def _assets(data: Path) -> list[dg.AssetsDefinition | dg.SourceAsset]:
    numbers = dataset_source("numbers", "json", data_files=str(data))

    @dataset_asset
    def doubled(numbers: Dataset) -> Dataset:
        record("doubled")
        return numbers.map(lambda example: {"twice": example["n"] * 2})

    return [numbers, doubled]


def _code_versions(assets: list) -> dict[dg.AssetKey, str | None]:
    return {
        key: version
        for asset in assets
        if isinstance(asset, dg.AssetsDefinition)
        for key, version in asset.code_versions_by_key.items()
    }


@pytest.fixture
def prod_instance(dagster_homes: Path) -> Iterator[dg.DagsterInstance]:
    """Production's instance: another persistent DAGSTER_HOME."""
    home = new_dagster_home(dagster_homes)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        yield instance


DOUBLED = dg.AssetKey("doubled")


def test_a_promoted_version_is_production_s_latest_and_production_does_not_recompute_it(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    prod_instance: dg.DagsterInstance,
    body_calls: Callable[[], list[str]],
) -> None:
    data = tmp_path / "numbers.jsonl"
    write_jsonl(data, [{"n": n} for n in range(50)])
    dev, prod = DatasetStore(str(tmp_path / "dev")), DatasetStore(str(tmp_path / "prod"))
    assets = _assets(data)
    dev_run = dg.materialize(
        assets, instance=instance, resources={"io_manager": DatasetIOManager(base_dir=dev.root)}
    )
    assert dev_run.success
    dev_version = latest(instance, "doubled")
    recipe = metadata_value(dev_version, "dagster_ds/recipe")

    (step,) = plan_promotion(instance, dev, prod_instance, [DOUBLED], _code_versions(assets))
    recorded = promote(step, dev, prod, prod_instance)

    assert recorded is not None
    promoted = latest(prod_instance, "doubled")
    assert (promoted.tags or {})["dagster/data_version"] == (dev_version.tags or {})[
        "dagster/data_version"
    ]
    assert (promoted.tags or {})["dagster_ds/promoted"] == recipe
    assert metadata_value(promoted, "dagster_ds/path") == prod.path_for(DOUBLED, recipe)
    assert prod.load(DOUBLED, recipe)["twice"] == [2 * n for n in range(50)]
    # Production, on the same code and data, finds the version stored: nothing recomputes.
    calls = len(body_calls())
    prod_run = dg.materialize(
        _assets(data),
        instance=prod_instance,
        resources={"io_manager": DatasetIOManager(base_dir=prod.root)},
    )
    assert prod_run.success
    assert len(body_calls()) == calls
    assert metadata_value(latest(prod_instance, "doubled"), "dagster_ds/cache") == "hit"
    # Promoting again ships nothing.
    (again,) = plan_promotion(instance, dev, prod_instance, [DOUBLED], _code_versions(assets))
    assert again.already
    assert promote(again, dev, prod, prod_instance) is None


def test_a_promote_refuses_code_production_does_not_deploy_and_writes_nothing(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    prod_instance: dg.DagsterInstance,
    body_calls: Callable[[], list[str]],
) -> None:
    data = tmp_path / "numbers.jsonl"
    write_jsonl(data, [{"n": 1}])
    dev, prod = DatasetStore(str(tmp_path / "dev")), DatasetStore(str(tmp_path / "prod"))
    assets = _assets(data)
    assert dg.materialize(
        assets, instance=instance, resources={"io_manager": DatasetIOManager(base_dir=dev.root)}
    ).success

    with pytest.raises(OrchestrationError, match="production's deployed code has 'f00'"):
        plan_promotion(instance, dev, prod_instance, [DOUBLED], {DOUBLED: "f00"})
    with pytest.raises(OrchestrationError, match="not defined in production's code"):
        plan_promotion(instance, dev, prod_instance, [DOUBLED], {})
    assert not Path(prod.root).exists()
    assert latest_or_none(prod_instance) is None


def latest_or_none(instance: dg.DagsterInstance) -> dg.AssetMaterialization | None:
    event = instance.get_latest_materialization_event(DOUBLED)
    return event.asset_materialization if event is not None else None


_CHILD = """
import sys
import dagster as dg
from dagster_ds.orchestration import DatasetStore
from dagster_ds.orchestration import plan_promotion, promote

dev_home, prod_home, dev_root, prod_root, code_version = sys.argv[1:]
key = dg.AssetKey("doubled")
with dg.DagsterInstance.from_config(dev_home) as dev_instance, \\
        dg.DagsterInstance.from_config(prod_home) as prod_instance:
    (step,) = plan_promotion(dev_instance, DatasetStore(dev_root), prod_instance, [key],
                             {key: code_version})
    print("copying", flush=True)
    promote(step, DatasetStore(dev_root), DatasetStore(prod_root), prod_instance)
    print("done", flush=True)
"""


def _tree_digest(root: Path) -> str:
    """The store's data and records (not the readers' usage records, which reads write)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "usage" not in path.relative_to(root).parts:
            digest.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return digest.hexdigest()


@pytest.mark.parametrize("delay", [0.1, 0.8])
def test_a_promote_killed_at_any_moment_leaves_production_old_or_new_never_half(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    dagster_home: Path,
    prod_instance: dg.DagsterInstance,
    body_calls: Callable[[], list[str]],
    delay: float,
) -> None:
    data = tmp_path / "numbers.jsonl"
    write_jsonl(data, [{"n": n, "text": "x" * 200} for n in range(20_000)])
    dev, prod = DatasetStore(str(tmp_path / "dev")), DatasetStore(str(tmp_path / "prod"))
    assets = _assets(data)
    assert dg.materialize(
        assets, instance=instance, resources={"io_manager": DatasetIOManager(base_dir=dev.root)}
    ).success
    recipe = metadata_value(latest(instance, "doubled"), "dagster_ds/recipe")
    dev_before = _tree_digest(Path(dev.root))
    prod_home = Path(prod_instance.root_directory)
    child = _fast.Popen(
        [
            sys.executable,
            "-c",
            _CHILD,
            str(dagster_home),
            str(prod_home),
            dev.root,
            prod.root,
            str(_code_versions(assets)[DOUBLED]),
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == b"copying"
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()

    recorded = latest_or_none(prod_instance)
    if recorded is None:  # killed before the record: production's instance is unchanged
        if prod.contains(DOUBLED, recipe):  # a complete copy may be there, unreferenced
            assert prod.load(DOUBLED, recipe)["n"] == list(range(20_000))
    else:  # recorded: the version is complete and reads back exactly
        assert metadata_value(recorded, "dagster_ds/recipe") == recipe
        assert prod.load(DOUBLED, recipe)["twice"] == [2 * n for n in range(20_000)]
    assert _tree_digest(Path(dev.root)) == dev_before  # development's data is untouched


def _promote_then_correct_a_label(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    prod_instance: dg.DagsterInstance,
    make_assets: Callable[[list[str]], list[dg.AssetsDefinition]],
    child: str,
) -> tuple[list[str], DatasetStore]:
    """Develop ``raw`` and ``child``, promote both, correct a label, refresh production.

    Returns the data files and the production store.
    """
    folder = tmp_path / "data"
    files = write_label_files(folder)
    dev, prod = DatasetStore(str(tmp_path / "dev")), DatasetStore(str(tmp_path / "prod"))
    assets = make_assets(files)
    assert dg.materialize(
        assets, instance=instance, resources={"io_manager": DatasetIOManager(base_dir=dev.root)}
    ).success
    keys = [dg.AssetKey("raw"), dg.AssetKey(child)]
    for step in plan_promotion(instance, dev, prod_instance, keys, _code_versions(assets)):
        promote(step, dev, prod, prod_instance)
    correct_labels(folder)
    assert dg.materialize(
        make_assets(files),
        instance=prod_instance,
        resources={"io_manager": DatasetIOManager(base_dir=prod.root)},
    ).success
    return files, prod


def test_promoted_shards_keep_their_column_records_so_production_names_changed_columns(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    prod_instance: dg.DagsterInstance,
    body_calls: Callable[[], list[str]],
) -> None:
    _promote_then_correct_a_label(
        tmp_path, instance, prod_instance, text_and_label_assets, "lengths"
    )

    changed = str(metadata_value(latest(prod_instance, "lengths"), "dagster_ds/changed"))
    assert "parent 'raw': column 'label' changed in 1 of 3 shards" in changed
    assert "no column fingerprints" not in changed
    # n_chars reads only text: its promoted output is reused by its read columns.
    assert "'n_chars' reads only 'text': reused 1 of 1 changed shards (3 in all)" in changed
    # It ran in development only (3 shards), never in production.
    assert [call for call in body_calls() if call.startswith("n_chars")] == ["n_chars:5"] * 3


def test_a_promoted_filter_s_kept_rows_are_reused_by_columns_in_production(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    prod_instance: dg.DagsterInstance,
    body_calls: Callable[[], list[str]],
) -> None:
    files, prod = _promote_then_correct_a_label(
        tmp_path, instance, prod_instance, text_and_label_filter_assets, "kept"
    )

    # not_three reads only text: the promoted kept positions are reused, it never runs again.
    assert [call for call in body_calls() if call.startswith("not_three")] == ["not_three:5"] * 3
    changed = str(metadata_value(latest(prod_instance, "kept"), "dagster_ds/changed"))
    assert "parent 'raw': column 'label' changed in 1 of 3 shards" in changed
    assert "'not_three' reads only 'text': reused 1 of 1 changed shards (3 in all)" in changed
    # The rows are those a cold recompute gives.
    cold = DatasetStore(str(tmp_path / "cold"))
    with dg.instance_for_test() as fresh:
        assert dg.materialize(
            text_and_label_filter_assets(files),
            instance=fresh,
            resources={"io_manager": DatasetIOManager(base_dir=cold.root)},
        ).success
        recipe = str(metadata_value(latest(fresh, "kept"), "dagster_ds/recipe"))
    promoted = str(metadata_value(latest(prod_instance, "kept"), "dagster_ds/recipe"))
    assert (
        prod.load(dg.AssetKey("kept"), promoted).to_dict()
        == cold.load(dg.AssetKey("kept"), recipe).to_dict()
    )


@pytest.mark.parametrize("raw_apart", [True, False], ids=["raw-in-a-third-store", "raw-in-dev"])
def test_a_promoted_version_whose_parent_was_not_promoted_names_its_changed_columns(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    prod_instance: dg.DagsterInstance,
    body_calls: Callable[[], list[str]],
    raw_apart: bool,
) -> None:
    """Only ``lengths`` is promoted; ``raw`` lives in a store of its own shared by
    development and production, or in development's store. Production's next run compares
    ``raw``'s new version with the one development's ``lengths`` was computed from:
    promote carries what that needs of its record."""
    folder = tmp_path / "data"
    files = write_label_files(folder)
    dev, prod = DatasetStore(str(tmp_path / "dev")), DatasetStore(str(tmp_path / "prod"))
    raw_key = "raw_store" if raw_apart else "io_manager"

    def materialize(home: dg.DagsterInstance, store: DatasetStore) -> list[dg.AssetsDefinition]:
        assets = text_and_label_assets(files, raw_io_manager_key=raw_key)
        resources = {
            "io_manager": DatasetIOManager(base_dir=store.root),
            "raw_store": DatasetIOManager(base_dir=str(tmp_path / "raw-store")),
        }
        assert dg.materialize(assets, instance=home, resources=resources).success
        return assets

    assets = materialize(instance, dev)
    for step in plan_promotion(
        instance, dev, prod_instance, [dg.AssetKey("lengths")], _code_versions(assets)
    ):
        promote(step, dev, prod, prod_instance)
    correct_labels(folder)
    calls = len(body_calls())
    materialize(prod_instance, prod)

    changed = str(metadata_value(latest(prod_instance, "lengths"), "dagster_ds/changed"))
    assert "parent 'raw': column 'label' changed in 1 of 3 shards" in changed
    assert "'n_chars' reads only 'text': reused 1 of 1 changed shards (3 in all)" in changed
    assert [call for call in body_calls()[calls:] if call.startswith("n_chars")] == []

"""``dagster-ds promote``: development's versions become production's, checked against its code.

Development and production are two persistent instances and two stores; the
code location is a real file, loaded as ``dagster`` loads it.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from click.testing import CliRunner, Result

from dagster_ds.cli import main
from tests.conftest import new_dagster_home

LOCATION = """
import dagster as dg

from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source

numbers = dataset_source("numbers", "json", data_files={data!r})


@dataset_asset
def scaled(numbers: Dataset) -> Dataset:
    return numbers.map(lambda row: {{"scaled": row["n"] * {factor}}})


defs = dg.Definitions(assets=[numbers, scaled], resources={{"io_manager": DatasetIOManager()}})
"""


def _location(folder: Path, name: str, data: Path, factor: int) -> Path:
    path = folder / f"{name}.py"
    path.write_text(LOCATION.format(data=str(data), factor=factor))
    return path


def _assets(path: Path) -> list:
    namespace: dict[str, object] = {"__name__": path.stem}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return [namespace["numbers"], namespace["scaled"]]


def _materialize(path: Path, instance: dg.DagsterInstance, store: Path) -> dg.AssetMaterialization:
    from dagster_ds.orchestration import DatasetIOManager

    resources = {"io_manager": DatasetIOManager(base_dir=str(store))}
    assert dg.materialize(_assets(path), instance=instance, resources=resources).success
    event = instance.get_latest_materialization_event(dg.AssetKey("scaled"))
    assert event is not None
    assert event.asset_materialization is not None
    return event.asset_materialization


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "numbers.jsonl"
    path.write_text("".join(f'{{"n": {n}}}\n' for n in range(30)))
    return path


def _promote(dev_home: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["promote", *args], env={"DAGSTER_HOME": str(dev_home)})


def test_a_promoted_version_is_recorded_in_production_and_production_does_not_recompute_it(
    tmp_path: Path, dagster_home: Path, dagster_homes: Path, data: Path
) -> None:
    location = _location(tmp_path, "pipeline", data, factor=2)
    dev_store, prod_store = tmp_path / "dev", tmp_path / "prod"
    prod_home = new_dagster_home(dagster_homes)
    with dg.DagsterInstance.from_config(str(dagster_home)) as dev_instance:
        developed = _materialize(location, dev_instance, dev_store)

    result = _promote(
        dagster_home,
        "scaled",
        *("--from", str(dev_store), "--to", str(prod_store)),
        *("--instance", str(prod_home), "-f", str(location)),
    )

    assert result.exit_code == 0, result.output
    recipe = developed.metadata["dagster_ds/recipe"].value
    assert f"scaled: promoted {recipe}" in result.output
    with dg.DagsterInstance.from_config(str(prod_home)) as prod_instance:
        event = prod_instance.get_latest_materialization_event(dg.AssetKey("scaled"))
        assert event is not None
        assert event.asset_materialization is not None
        promoted = event.asset_materialization
        assert promoted.tags == {
            **{
                k: v
                for k, v in (developed.tags or {}).items()
                if k.startswith("dagster/") and not k.startswith("dagster/input_event_pointer/")
            },
            "dagster_ds/promoted": recipe,
        }
        # Production on the same code finds the version in its store: nothing recomputes.
        rerun = _materialize(location, prod_instance, prod_store)
        assert rerun.metadata["dagster_ds/cache"].value == "hit"
        assert rerun.tags["dagster/data_version"] == developed.tags["dagster/data_version"]  # type: ignore[index]

    again = _promote(
        dagster_home,
        "scaled",
        *("--from", str(dev_store), "--to", str(prod_store)),
        *("--instance", str(prod_home), "-f", str(location)),
    )
    assert again.exit_code == 0, again.output
    assert f"scaled: production already has {recipe} as latest" in again.output


def test_a_promote_is_refused_when_production_deploys_other_code(
    tmp_path: Path, dagster_home: Path, dagster_homes: Path, data: Path
) -> None:
    developed = _location(tmp_path, "developed", data, factor=2)
    deployed = _location(tmp_path, "deployed", data, factor=3)
    dev_store, prod_store = tmp_path / "dev", tmp_path / "prod"
    prod_home = new_dagster_home(dagster_homes)
    with dg.DagsterInstance.from_config(str(dagster_home)) as dev_instance:
        _materialize(developed, dev_instance, dev_store)

    result = _promote(
        dagster_home,
        "scaled",
        *("--from", str(dev_store), "--to", str(prod_store)),
        *("--instance", str(prod_home), "-f", str(deployed)),
    )

    assert result.exit_code != 0
    assert "but production's deployed code has" in result.output
    assert "production would not compute this version" in result.output
    assert not prod_store.exists()
    with dg.DagsterInstance.from_config(str(prod_home)) as prod_instance:
        assert prod_instance.get_latest_materialization_event(dg.AssetKey("scaled")) is None

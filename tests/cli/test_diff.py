"""``dagster-ds diff``: two stored versions of an asset compared, found as the other commands do."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest
import yaml
from click.testing import CliRunner, Result

from dagster_ds import Dataset
from dagster_ds.cli import main
from dagster_ds.orchestration import DatasetIOManager, DatasetStore, dataset_asset, dataset_source
from tests import _fast
from tests.conftest import QUICK_INSTANCE, new_dagster_home
from tests.orchestration.conftest import write_jsonl

_COMMAND = str(Path(sys.executable).with_name("dagster-ds"))


@dataclass(frozen=True)
class Versions:
    """An instance with three versions of ``people``: v1, v2 (one row edited, one added), v3."""

    home: Path
    store: Path
    recipes: list[str]


def _materialize(instance: dg.DagsterInstance, data: Path, store: Path, salt: int) -> str:
    source = dataset_source("rows", "json", data_files=str(data))

    @dataset_asset(name="people")
    def people(rows: Dataset) -> Dataset:
        return rows.map(lambda row: {"salted": row["id"] * salt})

    resources = {"io_manager": DatasetIOManager(base_dir=str(store))}
    assert dg.materialize([source, people], instance=instance, resources=resources).success
    event = instance.get_latest_materialization_event(dg.AssetKey("people"))
    assert event is not None
    assert event.asset_materialization is not None
    return str(event.asset_materialization.metadata["dagster_ds/recipe"].value)


@pytest.fixture(scope="module")
def versions(dagster_homes: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Versions]:
    home = new_dagster_home(dagster_homes)
    folder = tmp_path_factory.mktemp("diff")
    data, store = folder / "rows.jsonl", folder / "store"
    recipes = []
    settings = {**QUICK_INSTANCE, "telemetry": {"enabled": False}}
    (home / "dagster.yaml").write_text(yaml.safe_dump(settings))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DAGSTER_HOME", str(home))
        instance = dg.DagsterInstance.get()
        rows = [{"id": i, "name": f"n{i}"} for i in range(4)]
        write_jsonl(data, rows)
        recipes.append(_materialize(instance, data, store, 1))
        rows[1] = {"id": 1, "name": "renamed"}
        rows.append({"id": 9, "name": "new"})
        write_jsonl(data, rows)
        recipes.append(_materialize(instance, data, store, 1))
        recipes.append(_materialize(instance, data, store, 2))
        instance.dispose()
    yield Versions(home, store, recipes)
    shutil.rmtree(home, ignore_errors=True)


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_by_default_the_two_latest_versions_are_compared(versions: Versions) -> None:
    result = _run("diff", "people", "--store", str(versions.store), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["old"]["recipe"] == versions.recipes[1]
    assert report["new"]["recipe"] == versions.recipes[2]
    # salted doubled in every row but id 0's; without a key, a column counts the values
    # replaced as multisets: {1, 2, 3, 9} became {2, 4, 6, 18}, 3 values replaced.
    assert (report["rows_added"], report["rows_removed"]) == (4, 4)
    assert report["columns_changed"] == {"salted": 3}
    assert report["schema"] == {"added": {}, "removed": {}, "retyped": {}}


def test_prefixes_and_a_key_show_the_changed_rows(versions: Versions) -> None:
    old, new = versions.recipes[0][:8], versions.recipes[1][:8] + "…"
    result = _run("diff", "people", old, new, "--key", "id", "--store", str(versions.store))
    assert result.exit_code == 0, result.output
    assert "rows: 1 added, 0 removed, 1 changed (by key 'id')" in result.stdout
    assert "columns changed: name (1)" in result.stdout
    assert "schema: unchanged" in result.stdout
    assert "id=1: name: 'n1' → 'renamed'" in result.stdout
    assert '{"id": 9, "name": "new", "salted": 9}' in result.stdout


def test_an_unknown_or_ambiguous_prefix_names_the_candidates(versions: Versions) -> None:
    unknown = _run("diff", "people", "zzzz", "--store", str(versions.store))
    assert unknown.exit_code == 2
    assert "'zzzz' starts no stored version of 'people'" in unknown.output
    for recipe in versions.recipes:
        assert recipe in unknown.output
    ambiguous = _run("diff", "people", "", "--store", str(versions.store))
    assert ambiguous.exit_code == 2
    assert "starts 3 versions of 'people'" in ambiguous.output


@pytest.mark.slow
def test_with_dagster_home_the_recorded_store_is_used_in_a_process_of_its_own(
    versions: Versions,
) -> None:
    env = {**os.environ, "DAGSTER_HOME": str(versions.home)}
    done = _fast.run(  # the installed script, forked from the warm server
        [sys.executable, _COMMAND, "diff", "people", versions.recipes[0][:10], "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"store: {versions.store} (from $DAGSTER_HOME's materializations" in done.stderr
    report = json.loads(done.stdout)
    assert report["new"]["recipe"] == versions.recipes[2]
    assert report["shards_read"] == {"old": 1, "new": 1}


def test_a_partitioned_asset_is_compared_partition_by_partition(tmp_path: Path) -> None:
    store = DatasetStore(str(tmp_path / "store"))
    key = dg.AssetKey("daily")
    for partition, values in (("d1", [1, 2]), ("d2", [5]), ("d1", [1, 3]), ("d2", [5, 6])):
        store.save(key, Dataset.from_dict({"n": values}), partition=partition)
    unchosen = _run("diff", "daily", "--store", store.root)
    assert unchosen.exit_code == 2
    assert "partitioned ('d1', 'd2' are stored): choose one with --partition" in unchosen.output
    chosen = _run("diff", "daily", "--partition", "d2", "--store", store.root, "--json")
    assert chosen.exit_code == 0, chosen.output
    report = json.loads(chosen.stdout)
    assert (report["old"]["num_rows"], report["new"]["num_rows"]) == (1, 2)
    assert (report["rows_added"], report["rows_removed"]) == (1, 0)
    assert report["samples"]["added"] == [{"n": 6}]

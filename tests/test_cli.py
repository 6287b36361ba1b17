"""``dagster-ds`` finds the store as the assets do, and says which store it used.

The commands run against a real Dagster instance at ``$DAGSTER_HOME`` holding real
materializations: one instance for the module, materialized once (a test that adds
materializations does so on a copy of it). The commands run in this process (click's
runner); one test runs the installed ``dagster-ds`` in a process of its own.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest
import yaml
from click.testing import CliRunner, Result

from dagster_ds import Dataset, load_from_disk
from dagster_ds.cli import main
from dagster_ds.orchestration import DatasetIOManager, DatasetStore, dataset_asset, dataset_source
from tests import _fast
from tests.conftest import QUICK_INSTANCE, new_dagster_home

_COMMAND = str(Path(sys.executable).with_name("dagster-ds"))


@dataclass(frozen=True)
class Materialized:
    """A Dagster instance whose ``tokenized`` asset was materialized twice, in its default store.

    Attributes:
        home: The instance's folder.
        docs: The source file.
        old: The recipe of the first version (``tokenized`` splits on " ").
        new: The recipe of the second, latest version (it splits on "o").
    """

    home: Path
    docs: Path
    old: str
    new: str

    @property
    def store(self) -> Path:
        """The instance's default store, where both versions are."""
        return self.home / "storage" / "dagster_ds"


def _instance_folder(home: Path) -> Path:
    """``home`` made a Dagster instance's folder (its dagster.yaml: one SQLite event log)."""
    settings = {**QUICK_INSTANCE, "telemetry": {"enabled": False}}
    (home / "dagster.yaml").write_text(yaml.safe_dump(settings))
    return home


def _pipeline(docs: Path, separator: str) -> list[dg.AssetsDefinition | dg.SourceAsset]:
    source = dataset_source("docs", "json", data_files=str(docs))

    @dataset_asset
    def tokenized(docs: Dataset) -> Dataset:
        return docs.map(lambda row: {"tokens": row["text"].split(separator)})

    return [source, tokenized]


def _materialize(
    assets: list[dg.AssetsDefinition | dg.SourceAsset], base_dir: Path | None = None
) -> str:
    """Materialize ``assets`` in the instance at $DAGSTER_HOME; the recipe of the last one."""
    with dg.DagsterInstance.get() as instance:
        store = str(base_dir) if base_dir is not None else None
        resources = {"io_manager": DatasetIOManager(base_dir=store)}
        assert dg.materialize(assets, instance=instance, resources=resources).success
        event = instance.get_latest_materialization_event(assets[-1].key)
        assert event is not None
        assert event.asset_materialization is not None
        metadata = event.asset_materialization.metadata
        # The recipe's key: "dagster_ds/recipe", formerly "dagster_ds/fingerprint".
        recipe = metadata.get("dagster_ds/recipe") or metadata["dagster_ds/fingerprint"]
        return str(recipe.value)


@pytest.fixture(scope="module")
def materialized(
    dagster_homes: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Materialized]:
    """The module's instance (see `Materialized`); one test ends by collecting ``old``."""
    home = _instance_folder(new_dagster_home(dagster_homes))
    folder = tmp_path_factory.mktemp("materialized")
    docs = folder / "docs.jsonl"
    docs.write_text("".join(json.dumps({"text": text}) + "\n" for text in ("a b", "to do")))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DAGSTER_HOME", str(home))
        env.setenv("DAGSTER_DISABLE_TELEMETRY", "yes")
        env.setenv("DAGSTER_DS_CACHE", str(folder / "cache"))
        old = _materialize(_pipeline(docs, " "))
        new = _materialize(_pipeline(docs, "o"))
    yield Materialized(home, docs, old, new)
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def home(materialized: Materialized, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$DAGSTER_HOME: the module's instance."""
    monkeypatch.setenv("DAGSTER_HOME", str(materialized.home))
    monkeypatch.setenv("DAGSTER_DISABLE_TELEMETRY", "yes")
    return materialized.home


@pytest.fixture
def own_home(materialized: Materialized, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$DAGSTER_HOME: a copy of the module's instance, for a test that materializes more.

    The copy's records of ``tokenized`` still name the module instance's store.
    """
    copy = tmp_path / "home"
    shutil.copytree(materialized.home, copy)
    monkeypatch.setenv("DAGSTER_HOME", str(copy))
    monkeypatch.setenv("DAGSTER_DISABLE_TELEMETRY", "yes")
    return copy


@pytest.fixture
def empty_home(dagster_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$DAGSTER_HOME: an instance without materializations."""
    monkeypatch.setenv("DAGSTER_HOME", str(_instance_folder(dagster_home)))
    monkeypatch.setenv("DAGSTER_DISABLE_TELEMETRY", "yes")
    return dagster_home


@pytest.fixture
def outside_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$DAGSTER_DS_CACHE: a dataset cache that holds none of the assets."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("DAGSTER_DS_CACHE", str(cache))
    return cache


def _run(*args: str) -> Result:
    """``dagster-ds ARGS`` in this process, with this environment ($DAGSTER_HOME)."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _said(materialized: Materialized, asset: str) -> str:
    return f"store: {materialized.store} (from $DAGSTER_HOME's materializations of '{asset}')\n"


@pytest.mark.slow
def test_the_installed_command_finds_the_store_in_a_process_of_its_own(
    materialized: Materialized, home: Path, tmp_path: Path, outside_cache: Path
) -> None:
    exported = _fast.run(  # the installed script, forked from the warm server
        [sys.executable, _COMMAND, "export", "tokenized", str(tmp_path / "new")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert exported.returncode == 0, exported.stderr
    assert exported.stderr == _said(materialized, "tokenized")
    assert load_from_disk(str(tmp_path / "new"))["tokens"][:] == [["a b"], ["t", " d", ""]]
    assert not outside_cache.exists()


def test_with_dagster_home_every_command_uses_the_instances_store(
    materialized: Materialized, home: Path, tmp_path: Path, outside_cache: Path
) -> None:
    old, new, said = materialized.old, materialized.new, _said(materialized, "tokenized")

    exported = _run("export", "tokenized", str(tmp_path / "new"))
    assert exported.exit_code == 0, exported.stderr
    assert exported.stderr == said
    assert load_from_disk(str(tmp_path / "new"))["tokens"][:] == [["a b"], ["t", " d", ""]]

    # Fingerprints as the run log and the UI show them: cut short, with a trailing "…".
    exported = _run("export", "tokenized", str(tmp_path / "old"), "--fingerprint", f"{old[:10]}…")
    assert exported.exit_code == 0, exported.stderr
    assert load_from_disk(str(tmp_path / "old"))["tokens"][:] == [["a", "b"], ["to", "do"]]
    explained = _run("hash", "explain", f"{old[:12]}…", f"{new[:12]}...")
    assert explained.exit_code == 0, explained.stderr
    assert "closure variable 'separator': ' ' → 'o'" in explained.stdout
    assert explained.stderr == said

    listed = _run("cache", "ls")
    assert listed.exit_code == 0, listed.stderr
    assert listed.stdout.splitlines()[-1].endswith(f" in {materialized.store}")

    # Last: it removes the old version from the module's instance (no other test reads it).
    collected = _run("cache", "gc", "--keep-versions", "1")
    assert collected.exit_code == 0, collected.stderr
    assert collected.stdout.startswith("removed 1 old versions")
    (kept,) = DatasetStore(str(materialized.store)).versions(dg.AssetKey("tokenized"))
    assert new in (kept.get("recipe"), kept.get("fingerprint"))
    assert not outside_cache.exists()


def test_each_asset_is_looked_for_where_its_materializations_are(
    materialized: Materialized, own_home: Path, tmp_path: Path, outside_cache: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    source = dataset_source("other", "json", data_files=str(materialized.docs))

    @dataset_asset
    def lengths(other: Dataset) -> Dataset:
        return other.map(lambda row: {"length": len(row["text"])})

    _materialize([source, lengths], base_dir=elsewhere)

    exported = _run("export", "lengths", str(tmp_path / "out"))
    assert exported.exit_code == 0, exported.stderr
    assert exported.stderr == (
        f"store: {elsewhere} (from $DAGSTER_HOME's materializations of 'lengths')\n"
    )
    assert load_from_disk(str(tmp_path / "out"))["length"][:] == [3, 5]
    # Not the copy's default store: the one its records of 'tokenized' name.
    assert _run("export", "tokenized", str(tmp_path / "tokenized")).stderr == _said(
        materialized, "tokenized"
    )
    # Assets in two stores: a command about all of them asks which, instead of guessing.
    listed = _run("cache", "gc", "--keep-versions", "1")
    assert listed.exit_code == 2
    for part in (
        "records assets in 2 stores: ",
        f"'{elsewhere}' ('lengths')",
        f"'{materialized.store}' ('tokenized')",
        "Choose one with --store.",
    ):
        assert part in listed.stderr
    chosen = _run("cache", "gc", "--keep-versions", "1", "--store", str(elsewhere))
    assert chosen.exit_code == 0, chosen.stderr
    assert chosen.stderr == f"store: {elsewhere} (from --store)\n"
    assert chosen.stdout.startswith("removed 0 old versions and 0 entries only they used")
    assert not outside_cache.exists()


def test_a_command_that_finds_nothing_says_where_it_looked(
    empty_home: Path, tmp_path: Path, outside_cache: Path
) -> None:
    store = empty_home / "storage" / "dagster_ds"
    how = (
        "the default store of the Dagster instance at $DAGSTER_HOME: no materialization"
        " of 'tokenized' records one"
    )
    exported = _run("export", "tokenized", str(tmp_path / "out"))
    assert exported.exit_code == 1
    assert f"No stored version of asset 'tokenized' in '{store}' ({how});" in exported.stderr

    collected = _run("cache", "gc", "--keep-versions", "1")
    assert collected.exit_code == 0, collected.stderr
    assert (
        f"warning: no stored asset versions in '{store}' (the default store of the Dagster"
        " instance at $DAGSTER_HOME: no materialization records one); if they are in another"
        " store, give it with --store." in collected.stderr
    )


def test_without_dagster_home_the_dataset_cache_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outside_cache: Path
) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    listed = _run("cache", "ls")
    assert listed.exit_code == 0, listed.stderr
    assert listed.stderr.startswith(f"store: {outside_cache} (from $DAGSTER_DS_CACHE)\n")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "missing"))
    refused = _run("cache", "ls")
    assert refused.exit_code == 2
    assert f"$DAGSTER_HOME is '{tmp_path / 'missing'}', which is not a folder" in refused.stderr

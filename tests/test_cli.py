"""``dagster-ds`` finds the store as the assets do, and says which store it used.

Real ``dagster-ds`` processes, against a real Dagster instance in a temporary
``$DAGSTER_HOME`` holding real materializations.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml

from dagster_ds import Dataset, load_from_disk
from dagster_ds.orchestration import DatasetIOManager, DatasetStore, dataset_asset, dataset_source
from tests.conftest import QUICK_INSTANCE

pytestmark = pytest.mark.slow

_COMMAND = str(Path(sys.executable).with_name("dagster-ds"))


@pytest.fixture
def home(dagster_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Dagster instance at $DAGSTER_HOME (its dagster.yaml: one SQLite event log)."""
    settings = {**QUICK_INSTANCE, "telemetry": {"enabled": False}}
    (dagster_home / "dagster.yaml").write_text(yaml.safe_dump(settings))
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home))
    monkeypatch.setenv("DAGSTER_DISABLE_TELEMETRY", "yes")
    return dagster_home


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": text}) + "\n" for text in ("a b", "to do")))
    return path


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


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    """``dagster-ds ARGS`` in a process of its own, with this environment ($DAGSTER_HOME)."""
    return subprocess.run(
        [_COMMAND, *args], capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture
def outside_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$DAGSTER_DS_CACHE: a dataset cache that holds none of the assets."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("DAGSTER_DS_CACHE", str(cache))
    return cache


def test_with_dagster_home_every_command_uses_the_instances_store(
    home: Path, docs: Path, tmp_path: Path, outside_cache: Path
) -> None:
    old = _materialize(_pipeline(docs, " "))
    new = _materialize(_pipeline(docs, "o"))
    store = home / "storage" / "dagster_ds"  # the instance's default store
    said = f"store: {store} (from $DAGSTER_HOME's materializations of "

    exported = _run("export", "tokenized", str(tmp_path / "new"))
    assert exported.returncode == 0, exported.stderr
    assert exported.stderr == f"{said}'tokenized')\n"
    assert load_from_disk(str(tmp_path / "new"))["tokens"][:] == [["a b"], ["t", " d", ""]]

    # Fingerprints as the run log and the UI show them: cut short, with a trailing "…".
    exported = _run("export", "tokenized", str(tmp_path / "old"), "--fingerprint", f"{old[:10]}…")
    assert exported.returncode == 0, exported.stderr
    assert load_from_disk(str(tmp_path / "old"))["tokens"][:] == [["a", "b"], ["to", "do"]]
    explained = _run("hash", "explain", f"{old[:12]}…", f"{new[:12]}...")
    assert explained.returncode == 0, explained.stderr
    assert "closure variable 'separator': ' ' → 'o'" in explained.stdout
    assert explained.stderr == f"{said}'tokenized')\n"

    listed = _run("cache", "ls")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[-1].endswith(f" in {store}")

    collected = _run("cache", "gc", "--keep-versions", "1")
    assert collected.returncode == 0, collected.stderr
    assert collected.stdout.startswith("removed 1 old versions")
    (kept,) = DatasetStore(str(store)).versions(dg.AssetKey("tokenized"))
    assert new in (kept.get("recipe"), kept.get("fingerprint"))
    assert not outside_cache.exists()


def test_each_asset_is_looked_for_where_its_materializations_are(
    home: Path, docs: Path, tmp_path: Path, outside_cache: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    _materialize(_pipeline(docs, " "), base_dir=elsewhere)
    source = dataset_source("other", "json", data_files=str(docs))

    @dataset_asset
    def lengths(other: Dataset) -> Dataset:
        return other.map(lambda row: {"length": len(row["text"])})

    _materialize([source, lengths])

    exported = _run("export", "tokenized", str(tmp_path / "out"))
    assert exported.returncode == 0, exported.stderr
    assert exported.stderr == (
        f"store: {elsewhere} (from $DAGSTER_HOME's materializations of 'tokenized')\n"
    )
    # Assets in two stores: a command about all of them asks which, instead of guessing.
    listed = _run("cache", "gc", "--keep-versions", "1")
    assert listed.returncode == 2
    for part in (
        "records assets in 2 stores: ",
        f"'{elsewhere}' ('tokenized')",
        f"'{home / 'storage' / 'dagster_ds'}' ('lengths')",
        "Choose one with --store.",
    ):
        assert part in listed.stderr
    chosen = _run("cache", "gc", "--keep-versions", "1", "--store", str(elsewhere))
    assert chosen.returncode == 0, chosen.stderr
    assert chosen.stderr == f"store: {elsewhere} (from --store)\n"
    assert chosen.stdout.startswith("removed 0 old versions and 0 entries only they used")


def test_a_command_that_finds_nothing_says_where_it_looked(
    home: Path, tmp_path: Path, outside_cache: Path
) -> None:
    store = home / "storage" / "dagster_ds"
    how = (
        "the default store of the Dagster instance at $DAGSTER_HOME: no materialization"
        " of 'tokenized' records one"
    )
    exported = _run("export", "tokenized", str(tmp_path / "out"))
    assert exported.returncode == 1
    assert f"No stored version of asset 'tokenized' in '{store}' ({how});" in exported.stderr

    collected = _run("cache", "gc", "--keep-versions", "1")
    assert collected.returncode == 0, collected.stderr
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
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr.startswith(f"store: {outside_cache} (from $DAGSTER_DS_CACHE)\n")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "missing"))
    refused = _run("cache", "ls")
    assert refused.returncode == 2
    assert f"$DAGSTER_HOME is '{tmp_path / 'missing'}', which is not a folder" in refused.stderr

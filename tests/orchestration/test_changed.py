"""A dataset asset that runs says why (dagster_ds/changed, the run log, hash explain)."""

from __future__ import annotations

import importlib
import os
import sys
import textwrap
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import dagster as dg
import pytest
from click.testing import CliRunner

from dagster_ds import Dataset
from dagster_ds.cli import main
from dagster_ds.errors import DatasetAssetDefinitionError, HiddenInputWarning
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source
from tests.conftest import RunPython
from tests.orchestration._chain import record
from tests.orchestration.conftest import latest, metadata_value, write_jsonl

CHANGED = "dagster_ds/changed"


class Factor(dg.Config):
    factor: int = 1
    verbose: bool = False


class Params(dg.ConfigurableResource):
    k: int = 1
    api_token: str = "first-secret"


class Notifier(dg.ConfigurableResource):
    """Where progress messages go: cannot change any dataset."""

    affects_dataset_output: ClassVar[bool] = False
    channel: str = "#data"


def _materialize(
    assets: Sequence[Any],
    instance: dg.DagsterInstance,
    storage: Path,
    run_config: dict[str, Any] | None = None,
    **resources: Any,
) -> dg.ExecuteInProcessResult:
    result = dg.materialize(
        assets,
        instance=instance,
        resources={"io_manager": DatasetIOManager(base_dir=str(storage)), **resources},
        selection=assets,
        run_config=run_config,
    )
    assert result.success
    return result


def _changed(instance: dg.DagsterInstance, key: str) -> str:
    return str(metadata_value(latest(instance, key), CHANGED))


def _messages(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    return [
        entry.user_message
        for entry in instance.all_logs(run_id)
        if entry.user_message.startswith(("Ran ", "Skipped "))
    ]


def test_a_config_change_and_a_new_parent_version_are_said_in_words(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    data = write_jsonl(tmp_path / "n.jsonl", [{"n": 1}, {"n": 2}])
    numbers = dataset_source("numbers", "json", data_files=str(data))

    @dataset_asset
    def scaled(numbers: Dataset, config: Factor) -> Dataset:
        record("scaled")
        return numbers.map(lambda row: {"n": row["n"] * config.factor})

    @dataset_asset
    def total(scaled: Dataset) -> Dataset:
        record("total")
        return scaled.map(lambda row: {"m": row["n"] + 1})

    assets = [numbers, scaled, total]
    storage = tmp_path / "storage"

    def config(factor: int, verbose: bool = False) -> dict[str, Any]:
        return {"ops": {"scaled": {"config": {"factor": factor, "verbose": verbose}}}}

    _materialize(assets, instance, storage, config(1))
    assert _changed(instance, "scaled") == "first materialization: nothing stored before"
    result = _materialize(assets, instance, storage, config(2))
    assert _changed(instance, "scaled") == "config 'factor': 1 → 2"
    # The parent's new data version, and (from the two versions' records) which column.
    assert _changed(instance, "total") == (
        "parent 'scaled': new data version"
        + _arrow(instance, "scaled")
        + "; parent 'scaled': column 'n' changed in 1 of 1 shards"
    )
    messages = _messages(instance, result.run_id)
    assert "Ran scaled because config 'factor': 1 → 2." in messages
    _materialize(assets, instance, storage, config(2))
    assert _changed(instance, "total") == ("nothing changed (recipe unchanged, already stored)")
    assert body_calls() == ["scaled", "total", "scaled", "total"]


def _arrow(instance: dg.DagsterInstance, key: str) -> str:
    """`` (old… → new…)`` of the data versions of the last two materializations of ``key``."""
    records = instance.fetch_materializations(dg.AssetKey(key), limit=2).records
    new, old = (
        str((record.asset_materialization.tags or {})["dagster/data_version"])  # type: ignore[union-attr]
        for record in records
    )
    return f" ({old[:12]}… → {new[:12]}…)"


def test_ignored_config_fields_do_not_count(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    data = write_jsonl(tmp_path / "n.jsonl", [{"n": 1}])
    numbers = dataset_source("numbers", "json", data_files=str(data))

    @dataset_asset(ignore_args=["verbose"])
    def scaled(numbers: Dataset, config: Factor) -> Dataset:
        record("scaled")
        return numbers.map(lambda row: {"n": row["n"] * config.factor})

    storage = tmp_path / "storage"
    for verbose in (False, True):
        run_config = {"ops": {"scaled": {"config": {"factor": 3, "verbose": verbose}}}}
        _materialize([numbers, scaled], instance, storage, run_config)
    assert body_calls() == ["scaled"]

    def unknown(numbers: Dataset) -> Dataset:
        return numbers

    with pytest.raises(DatasetAssetDefinitionError, match="ignore_args names \\['nope'\\]"):
        dataset_asset(ignore_args=["nope"])(unknown)


def test_a_resource_config_change_recomputes_and_says_which_field(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    data = write_jsonl(tmp_path / "n.jsonl", [{"n": 1}, {"n": 2}])
    numbers = dataset_source("numbers", "json", data_files=str(data))

    @dataset_asset(required_resource_keys={"params", "notifier"})
    def shifted(context: dg.AssetExecutionContext, numbers: Dataset) -> Dataset:
        record("shifted")
        k = context.resources.params.k
        return numbers.map(lambda row: {"n": row["n"] + k})

    storage = tmp_path / "storage"
    assets = [numbers, shifted]
    _materialize(assets, instance, storage, params=Params(k=1), notifier=Notifier())
    # A resource that does not affect the output changes nothing.
    _materialize(assets, instance, storage, params=Params(k=1), notifier=Notifier(channel="#x"))
    assert body_calls() == ["shifted"]
    _materialize(assets, instance, storage, params=Params(k=5), notifier=Notifier())
    assert body_calls() == ["shifted", "shifted"]
    assert _changed(instance, "shifted") == "resource 'params' field 'k': 1 → 5"
    from dagster_ds.orchestration import DatasetStore

    stored = DatasetStore(str(storage)).load(
        dg.AssetKey("shifted"),
        metadata_value(latest(instance, "shifted"), "dagster_ds/recipe"),
    )
    assert stored["n"][:] == [6, 7]
    # A secret-looking field is hashed, never shown (nor stored in the recipe tree).
    _materialize(
        assets, instance, storage, params=Params(k=5, api_token="second"), notifier=Notifier()
    )
    changed = _changed(instance, "shifted")
    assert changed.startswith("resource 'params' field 'api_token': ")
    assert "secret" not in changed
    assert "second" not in changed
    files = [path for path in storage.rglob("*") if path.is_file()]
    assert files
    assert not any(b"first-secret" in path.read_bytes() for path in files)


def test_fingerprint_inputs_and_version_salt(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    body_calls: Callable[[], list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = write_jsonl(tmp_path / "n.jsonl", [{"n": 1}])
    numbers = dataset_source("numbers", "json", data_files=str(data))
    lookup = tmp_path / "lookup.txt"
    lookup.write_text("1")
    monkeypatch.setenv("DAGSTER_DS_TEST_MODE", "a")

    def build(salt: str | None) -> dg.AssetsDefinition:
        @dataset_asset(
            fingerprint_inputs=[dg.EnvVar("DAGSTER_DS_TEST_MODE"), str(lookup)], version_salt=salt
        )
        def looked_up(numbers: Dataset) -> Dataset:
            record("looked_up")
            extra = int(Path(lookup).read_text())
            return numbers.map(lambda row: {"n": row["n"] + extra})

        return looked_up

    storage = tmp_path / "storage"
    _materialize([numbers, build(None)], instance, storage)
    _materialize([numbers, build(None)], instance, storage)
    assert body_calls() == ["looked_up"]
    monkeypatch.setenv("DAGSTER_DS_TEST_MODE", "b")
    _materialize([numbers, build(None)], instance, storage)
    assert _changed(instance, "looked_up").startswith("env 'DAGSTER_DS_TEST_MODE': ")
    lookup.write_text("2")
    _materialize([numbers, build(None)], instance, storage)
    assert _changed(instance, "looked_up").startswith(f"file '{lookup}': ")
    _materialize([numbers, build("v2")], instance, storage)
    assert _changed(instance, "looked_up") == "version_salt added ('v2')"
    assert body_calls() == ["looked_up"] * 4


def test_a_function_reading_the_environment_or_files_gets_a_warning() -> None:
    def reads_environment(numbers: Dataset) -> Dataset:
        mode = os.environ["MODE"]
        return numbers.map(lambda row: {"mode": mode})

    with pytest.warns(HiddenInputWarning, match=r"reads os\.environ, which its fingerprint"):
        dataset_asset(reads_environment)

    def reads_a_file(numbers: Dataset) -> Dataset:
        with open("lookup.txt") as file:
            extra = file.read()
        return numbers.map(lambda row: {"extra": extra})

    with pytest.warns(HiddenInputWarning, match=r"reads open\(\)"):
        dataset_asset(reads_a_file)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dataset_asset(fingerprint_inputs=["lookup.txt"])(reads_a_file)
        dataset_asset(fingerprint_inputs=[dg.EnvVar("MODE")])(reads_environment)


PROJECT = """
import dagster as dg
from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source

MIN_WORDS = 8

docs = dataset_source("docs", "json", data_files={data!r})


def is_long(example):
    return len(example["text"].split()) >= MIN_WORDS


@dataset_asset
def long_docs(docs: Dataset) -> Dataset:
    return docs.filter(is_long)


assets = [docs, long_docs]
resources = {{"io_manager": DatasetIOManager(base_dir={storage!r})}}


def run():
    with dg.DagsterInstance.get() as instance:
        result = dg.materialize(assets, instance=instance, resources=resources, selection=assets)
    print("success" if result.success else "failure")
"""


# The second process also imports the example with HiddenInputWarning as an error: the
# static check does not fire on it.
SECOND_RUN = """
import warnings
from dagster_ds.errors import HiddenInputWarning
warnings.simplefilter("error", HiddenInputWarning)
import definitions
import words
words.run()
"""


def test_why_it_ran_works_across_processes_and_in_hash_explain(
    tmp_path: Path,
    dagster_home: Path,
    instance: dg.DagsterInstance,
    run_python: RunPython,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = " ".join(["word"] * 9)
    data = write_jsonl(tmp_path / "docs.jsonl", [{"text": text}, {"text": "short"}])
    storage = tmp_path / "storage"
    project = tmp_path / "project"
    project.mkdir()
    module = project / "words.py"
    module.write_text(textwrap.dedent(PROJECT.format(data=str(data), storage=str(storage))))
    monkeypatch.syspath_prepend(str(project))
    words = importlib.import_module("words")
    try:
        dg.materialize(words.assets, instance=instance, resources=words.resources)
    finally:
        del sys.modules["words"]
    first = str(metadata_value(latest(instance, "long_docs"), "dagster_ds/recipe"))
    module.write_text(module.read_text().replace("MIN_WORDS = 8", "MIN_WORDS = 10"))
    env = {"DAGSTER_HOME": str(dagster_home)}
    assert run_python(SECOND_RUN, path=[project], env=env) == "success"

    expected = "global 'MIN_WORDS': 8 → 10 (used by is_long)"
    materialization = latest(instance, "long_docs")
    assert metadata_value(materialization, CHANGED) == expected
    assert metadata_value(materialization, "dagster/row_count") == 0
    second = str(metadata_value(materialization, "dagster_ds/recipe"))
    runs = instance.get_runs(limit=1)
    assert f"Ran long_docs because {expected}." in _messages(instance, runs[0].run_id)

    explained = CliRunner().invoke(
        main, ["hash", "explain", first[:12], second[:12], "--store", str(storage)]
    )
    assert explained.exit_code == 0, explained.output
    assert explained.stdout.splitlines()[1:] == [f"  - {expected}"]

"""``dagster-ds plan`` loads a code location as ``dagster`` does, and changes nothing.

The location is a real file; the instance a persistent one at ``$DAGSTER_HOME``,
with real materializations in its default store. One test runs the installed
command in a process of its own and checks that no byte of the instance's
folder (its event log, its store) changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import dagster as dg
import pytest
from click.testing import CliRunner, Result

from dagster_ds.cli import main
from tests import _fast

_COMMAND = str(Path(sys.executable).with_name("dagster-ds"))

LOCATION = """
import dagster as dg

from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source

docs = dataset_source("docs", "json", data_files={docs!r})
SEPARATOR = {separator!r}


@dataset_asset
def cleaned(docs: Dataset) -> Dataset:
    return docs.map(lambda row: {{"text": row["text"].lower()}})


@dataset_asset
def tokens(cleaned: Dataset) -> Dataset:
    return cleaned.map(lambda row: {{"tokens": row["text"].split(SEPARATOR)}})


defs = dg.Definitions(
    assets=[docs, cleaned, tokens], resources={{"io_manager": DatasetIOManager()}}
)
"""


def _write(folder: Path, name: str, docs: Path, separator: str = " ") -> Path:
    path = folder / f"{name}.py"
    path.write_text(LOCATION.format(docs=str(docs), separator=separator))
    return path


def _load(path: Path) -> dg.Definitions:
    namespace: dict[str, object] = {"__name__": path.stem}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    defs = namespace["defs"]
    assert isinstance(defs, dg.Definitions)
    return defs


@pytest.fixture
def home(dagster_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home))
    monkeypatch.setenv("DAGSTER_DISABLE_TELEMETRY", "yes")
    return dagster_home


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "Hello World"}\n{"text": "The Quick Fox"}\n')
    return path


@pytest.fixture
def location(tmp_path: Path, home: Path, docs: Path) -> Path:
    """A code location file, materialized once in the instance at ``home``."""
    path = _write(tmp_path, "plan_location", docs)
    with dg.DagsterInstance.get() as instance:
        job = _load(path).resolve_implicit_global_asset_job_def()
        assert job.execute_in_process(instance=instance).success
    return path


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, ["plan", *args], catch_exceptions=False)


def _files(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def test_the_installed_command_plans_in_a_process_of_its_own_and_writes_nothing(
    tmp_path: Path, home: Path, location: Path, docs: Path
) -> None:
    docs.write_text(docs.read_text() + '{"text": "A New Row"}\n')
    edited = _write(tmp_path, "edited_location", docs, separator="o")
    before = _files(home)  # the instance's event log and its store (storage/dagster_ds)

    planned = _fast.run(  # the installed script, forked from the warm server
        [sys.executable, _COMMAND, "plan", "-f", str(edited), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )

    assert planned.returncode == 0, planned.stderr
    assert _files(home) == before
    plan = json.loads(planned.stdout)
    steps = {step["asset"]: step for step in plan["steps"]}
    assert steps["docs"]["action"] == "changed"
    assert steps["cleaned"]["action"] == "run"
    assert steps["cleaned"]["why"][0].startswith("parent 'docs': new data version (")
    assert steps["cleaned"]["estimate"]["runs"] == 1
    assert steps["tokens"]["why"] == [
        "global 'SEPARATOR': ' ' → 'o'",  # as dagster_ds/changed will say it
        "parent 'cleaned' is refreshed first",
    ]
    assert plan["summary"].startswith("plan: 2 to run, 0 to skip of 2; 1 source changed")
    assert plan["store"] == str(home / "storage" / "dagster_ds")
    assert "from $DAGSTER_HOME's materializations" in planned.stderr


def test_a_workspace_file_and_a_module_load_as_dagster_loads_them(
    tmp_path: Path, location: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(
        "load_from:\n  - python_module:\n      module_name: plan_location\n"
        "      working_directory: .\n"
    )
    from_workspace = _run("-w", str(workspace))
    assert from_workspace.exit_code == 0, from_workspace.output
    assert "plan: 0 to run, 2 to skip of 2" in from_workspace.output
    assert "tokens: skip: nothing changed (recipe unchanged, already stored)" in (
        from_workspace.output
    )

    monkeypatch.chdir(tmp_path)  # workspace.yaml in the current folder is the default
    selected = _run("--select", "key:tokens")
    assert selected.exit_code == 0, selected.output
    assert "  cleaned:" not in selected.output
    assert "plan: 0 to run, 1 to skip of 1" in selected.output


def test_a_location_that_cannot_be_planned_says_how_to_give_one(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, docs: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    nothing = _run()
    assert nothing.exit_code == 2
    assert "Give the code location: -w workspace.yaml, -m module or -f file.py" in nothing.output

    two = tmp_path / "two.py"
    two.write_text("import dagster as dg\na = dg.Definitions()\nb = dg.Definitions()\n")
    ambiguous = _run("-f", str(two))
    assert ambiguous.exit_code == 2
    assert "defines 2 Definitions objects (a, b); name one with -a" in ambiguous.output
    assert _run("-f", str(two), "-a", "b").exit_code == 0
    lazy = tmp_path / "lazy.py"
    lazy.write_text(
        "import dagster as dg\n@dg.definitions\ndef defs():\n    return dg.Definitions()\n"
    )
    assert "plan: 0 to run, 0 to skip of 0" in _run("-f", str(lazy)).output

    bad = _run("-f", str(_write(tmp_path, "bad_select", docs)), "--select", "key:(")
    assert bad.exit_code == 2
    assert "--select" in bad.output

    monkeypatch.delenv("DAGSTER_HOME")
    assert "set it to your Dagster instance's folder" in _run("-f", str(two), "-a", "b").output
    assert os.environ.get("DAGSTER_HOME") is None


LABELS = """
from dagster_ds import Dataset, load_dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset
import dagster as dg

FILES = {files!r}


@dataset_asset(fingerprint_inputs=FILES)
def raw() -> Dataset:
    return load_dataset("json", data_files=FILES, split="train", shard_bytes=0)


@dataset_asset
def lengths(raw: Dataset) -> Dataset:
    return raw.map(lambda batch: {{"n": [len(t) for t in batch["text"]]}}, batched=True)


defs = dg.Definitions(assets=[raw, lengths], resources={{"io_manager": DatasetIOManager()}})
"""


def test_the_plan_names_a_changed_parent_column_and_the_map_that_will_reuse_by_columns(
    tmp_path: Path, home: Path
) -> None:
    files = [tmp_path / f"part-{index}.jsonl" for index in range(3)]
    for index, path in enumerate(files):
        path.write_text("".join(f'{{"text": "t{index}-{i}", "label": 0}}\n' for i in range(4)))
    location = tmp_path / "labels.py"
    location.write_text(LABELS.format(files=[str(path) for path in files]))
    assets = _load(location)
    job = assets.resolve_implicit_global_asset_job_def()
    with dg.DagsterInstance.get() as instance:
        assert job.execute_in_process(instance=instance).success
        files[1].write_text("".join(f'{{"text": "t1-{i}", "label": 1}}\n' for i in range(4)))
        raw_only = [dg.AssetKey("raw")]
        assert job.execute_in_process(instance=instance, asset_selection=raw_only).success

    planned = _run("-f", str(location), "--select", "key:lengths")

    assert planned.exit_code == 0, planned.output
    assert "parent 'raw': column 'label' changed in 1 of 3 shards" in planned.output
    assert (
        "map writing 'n' reads only 'text': will reuse 1 of 1 changed shards by their read"
        " columns (3 in all)" in planned.output
    )

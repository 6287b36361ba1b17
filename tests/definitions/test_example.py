"""The example pipeline: it loads, validates, runs with the multiprocess executor, then skips."""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml

from dagster_ds import Dataset
from dagster_ds.cache import CacheStore
from definitions import defs
from tests import _fast
from tests.conftest import REPO_ROOT
from tests.definitions.conftest import IN_PROCESS, Example
from tests.dg import run_dg

ASSETS = ["paragraphs", "tokenized", "train", "test"]
PUBLISHED = "python_docs_hub"  # publishes train and test in one Hub commit


def _materializations(result: dg.ExecuteJobResult) -> dict[str, dict[str, Any]]:
    return {
        event.materialization.asset_key.to_user_string(): {
            key: value.value for key, value in event.materialization.metadata.items()
        }
        for event in result.get_asset_materialization_events()
    }


def _checks(result: dg.ExecuteJobResult) -> dict[str, bool]:
    evaluations = [
        event.event_specific_data
        for event in result.all_events
        if event.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    return {
        evaluation.asset_check_key.to_user_string(): evaluation.passed  # type: ignore[union-attr]
        for evaluation in evaluations
    }


def test_workspace_validates(tmp_path: Path) -> None:
    dagster = Path(sys.executable).with_name("dagster")
    result = _fast.run(  # the installed command, forked from the warm server
        [sys.executable, str(dagster), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=REPO_ROOT,
        env={**os.environ, "DAGSTER_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_pipeline_graph() -> None:
    graph = defs.resolve_asset_graph()
    keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
    assert keys == {"python_docs", *ASSETS, PUBLISHED, "python_docs_daily", "daily_paragraphs"}
    assert {check.to_user_string() for check in graph.asset_check_keys} == {
        "tokenized:schema",
        "train:row_count",
        "test:row_count",
    }
    assert defs.resolve_schedule_def("nightly_refresh").cron_schedule == "0 3 * * *"
    assert defs.resolve_sensor_def("observe_python_docs").minimum_interval_seconds == 900
    assert graph.get(dg.AssetKey("python_docs")).automation_condition is None  # no cron runs
    for key in [*ASSETS, PUBLISHED]:
        condition = graph.get(dg.AssetKey(key)).automation_condition
        assert condition is not None
        assert condition.get_label() == "fingerprint_changed"


def test_the_schedules_and_the_source_sensor_start_switched_on() -> None:
    for name in ("nightly_refresh", "daily_refresh"):
        assert defs.resolve_schedule_def(name).default_status == dg.DefaultScheduleStatus.RUNNING
    # The source sensor, and the automation sensor that turns its observations into runs.
    for name in ("observe_python_docs", "python_docs_automation"):
        assert defs.resolve_sensor_def(name).default_status == dg.DefaultSensorStatus.RUNNING
    # The daily refresh considers every day of the daily files.
    repository = defs.get_repository_def()
    with dg.instance_for_test() as instance:
        context = dg.build_schedule_context(instance=instance, repository_def=repository)
        tick = defs.resolve_schedule_def("daily_refresh").evaluate_tick(context)
    days = {path.stem for path in (REPO_ROOT / "definitions" / "data" / "daily").glob("*.jsonl")}
    assert {request.partition_key for request in tick.run_requests or []} == days


def test_the_multiprocess_executor_materializes_everything(example: Example) -> None:
    result = example.first
    assert result.success
    starts = [event for event in result.all_events if event.event_type_value == "STEP_START"]
    pids = {event.pid for event in starts}
    assert len(pids) == len(starts) >= 5  # one process per step, not this one
    assert os.getpid() not in pids
    observed = [event.asset_key for event in result.get_asset_observation_events()]
    assert observed == [dg.AssetKey("python_docs")]
    materialized = _materializations(result)
    assert sorted(materialized) == sorted([*ASSETS, PUBLISHED])
    assert {materialized[key]["dagster_ds/cache"] for key in ASSETS} == {"miss"}
    assert materialized[PUBLISHED]["dagster_ds/hub_push"] == "pushed"
    assert materialized["paragraphs"]["dagster/row_count"] == 1093
    assert (
        materialized["train"]["dagster/row_count"] + materialized["test"]["dagster/row_count"]
        == 1093
    )
    assert _checks(result) == {
        "tokenized:schema": True,
        "train:row_count": True,
        "test:row_count": True,
    }
    # The steps' processes shared one store, in the instance: their transforms' results
    # and the asset versions referencing them are in it.
    store = CacheStore(example.home / "storage" / "dagster_ds")
    kinds = [info.metadata.get("kind") for info in store.ls()]
    assert kinds.count("stored-dataset") == 5  # the four assets' versions, and the source's
    assert kinds.count("table") >= 4


def test_the_demo_reports_its_first_run_asset_by_asset(
    example: Example, capsys: pytest.CaptureFixture[str]
) -> None:
    from definitions.demo import report

    # The example's first run is `make demo`'s first: its run config, on a new instance.
    report("Run 1, from nothing", example.first, 1.0)
    printed = capsys.readouterr().out
    assert "Run 1, from nothing: succeeded" in printed
    # The table names each asset's outcome and the data version the UI shows.
    rows = [row.split() for row in printed.splitlines()]
    for asset in ASSETS:
        event = example.instance.get_latest_materialization_event(dg.AssetKey(asset))
        assert event is not None
        assert event.asset_materialization is not None
        version = (event.asset_materialization.tags or {})["dagster/data_version"]
        (row,) = [row for row in rows if row[:1] == [asset]]
        assert row[1:3] == ["computed", version], row
    assert "observed: a source, hashed by content" in printed


def test_the_examples_settings_end_with_its_runs(example: Example) -> None:
    # The runs had its instance and cache in the environment; the tests (this one and
    # every later one of this process) have their own.
    assert os.environ.get("DAGSTER_HOME") != str(example.home)
    assert os.environ.get("DAGSTER_DS_CACHE") != str(example.cache)


def test_the_source_sensor_launches_no_run_when_nothing_changed(example: Example) -> None:
    repository = defs.get_repository_def()
    runs = example.instance.get_runs_count()
    skipped: list[str] = []
    for _ in range(2):  # the first tick may record the source's first observation
        context = dg.build_sensor_context(instance=example.instance, repository_def=repository)
        data = repository.get_sensor_def("observe_python_docs").evaluate_tick(context)
        assert not data.run_requests
        for event in data.asset_events:
            example.instance.report_runless_asset_event(event)
        skipped.append(data.skip_message or "")
    assert skipped[-1].splitlines()[0] == "0 of 1 sources changed"
    assert skipped[-1].splitlines()[1].startswith("  python_docs: unchanged")
    assert example.instance.get_runs_count() == runs


def test_the_second_run_skips_every_transform_and_push(example: Example) -> None:
    first, second = _materializations(example.first), _materializations(example.second)
    assert second.keys() == first.keys()
    for key in ASSETS:
        metadata = second[key]
        assert metadata["dagster_ds/cache"] == "hit"
        assert metadata["dagster_ds/recipe"] == first[key]["dagster_ds/recipe"]
        assert metadata["dagster_ds/path"] == first[key]["dagster_ds/path"]
    assert second[PUBLISHED]["dagster_ds/hub_push"] == "skipped (unchanged)"
    assert second[PUBLISHED]["dagster_ds/hub_commit"] == first[PUBLISHED]["dagster_ds/hub_commit"]
    assert all(_checks(example.second).values())


def test_both_splits_are_one_hub_commit_naming_the_assets_and_the_run(example: Example) -> None:
    from huggingface_hub import HfApi

    from dagster_ds.hub.server import LocalHubServer
    from definitions.pipeline import REPO_ID

    first = _materializations(example.first)
    with LocalHubServer(example.home / "storage" / "dagster_ds_hub") as hub:
        api = HfApi(endpoint=hub.endpoint, token="reader")
        commits = api.list_repo_commits(REPO_ID, repo_type="dataset")
    pushes = [commit for commit in commits if "(Dagster run " in commit.title]
    assert len(pushes) == 1  # the second refresh made none
    (push,) = pushes
    assert push.commit_id == first[PUBLISHED]["dagster_ds/hub_commit"]
    assert (
        push.title
        == "; ".join(  # what the commit brings, split by split
            f"{split}: {first[split]['dagster/row_count']:,} rows"
            f" ({first[split]['dagster_ds/data_version'][:8]})"
            for split in ("train", "test")
        )
        + f" (Dagster run {example.first.run_id[:8]})"
    )
    for split in ("train", "test"):
        assert first[split]["dagster_ds/data_version"] in push.message
    assert example.first.run_id in push.message


def test_recorded_data_versions_are_the_fingerprints_of_the_stored_datasets(
    example: Example,
) -> None:
    for key in ASSETS:
        event = example.instance.get_latest_materialization_event(dg.AssetKey(key))
        assert event is not None
        assert event.asset_materialization is not None
        tags = event.asset_materialization.tags or {}
        loaded = defs.load_asset_value(key, instance=example.instance)
        assert isinstance(loaded, Dataset)
        assert loaded.fingerprint == tags["dagster/data_version"]  # the content fingerprint


# The README's declared pipeline (section "Components and `dg`"), `resources: true`.
README_PIPELINE = """
type: dagster_ds.orchestration.components.DatasetPipelineComponent
attributes:
  group_name: docs
  sources:
    - {name: docs, path: json, data_files: data/docs.jsonl}
  transforms:
    - name: lowercased
      fn: .transforms.lowercase
      fn_kwargs: {strip: true}
      inputs: {docs: docs}
  pushes:
    - {name: docs_hub, repo_id: me/docs, splits: {train: lowercased}}
  checks:
    - {asset: lowercased, min_rows: 1}
    - {asset: lowercased, columns: {text: string}}
  resources: true
"""


def _example_copy(folder: Path) -> Path:
    """The example project (code location, dg settings, data) copied into ``folder``."""
    project = folder / "example"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO_ROOT / "definitions", project / "definitions", ignore=ignore)
    for name in ("pyproject.toml", "workspace.yaml"):
        shutil.copy(REPO_ROOT / name, project / name)
    return project


IN_PROCESS_JSON = json.dumps(IN_PROCESS)


def _dg(project: Path, home: Path, *args: str) -> str:
    """``dg ARGS`` in the example's copy; its output, asserting it succeeded."""
    result = run_dg(project, home, *args, path=project)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    return output


def _materialized(home: Path, key: str) -> dg.EventLogEntry | None:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return instance.get_latest_materialization_event(dg.AssetKey(key))


def _says_all_of(declared: Any, scaffolded: Any) -> bool:
    """Whether the declaration ``declared`` says all that ``scaffolded`` says (and maybe more)."""
    if isinstance(scaffolded, dict):
        return isinstance(declared, dict) and all(
            key in declared and _says_all_of(declared[key], value)
            for key, value in scaffolded.items()
        )
    if isinstance(scaffolded, list):
        return isinstance(declared, list) and all(
            any(_says_all_of(item, wanted) for item in declared) for wanted in scaffolded
        )
    return declared == scaffolded


@pytest.mark.slow
def test_a_pipeline_scaffolded_with_dg_loads_and_runs_in_the_example(tmp_path: Path) -> None:
    project = _example_copy(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    component = "dagster_ds.orchestration.components.DatasetPipelineComponent"
    _dg(project, home, "scaffold", "defs", component, "docs")
    declaration = project / "definitions" / "defs" / "docs" / "defs.yaml"
    assert "All definitions loaded successfully" in _dg(project, home, "check", "defs")

    # The README's declaration is the scaffolded one (same source, transform, files and
    # check), with a push, a schema check and resources: true. Run in the scaffold's
    # place, it runs what the scaffold declared too.
    readme = yaml.safe_load(README_PIPELINE)
    assert _says_all_of(readme, yaml.safe_load(declaration.read_text()))
    declaration.write_text(textwrap.dedent(README_PIPELINE))
    # In dg's process (the claim is what runs, not step isolation: the multiprocess
    # executor would start each step's process cold, seconds of imports per step).
    _dg(project, home, "launch", "--assets", "group:docs", "--config-json", IN_PROCESS_JSON)
    assert _materialized(home, "lowercased") is not None
    pushed = _materialized(home, "docs_hub")
    assert pushed is not None
    assert pushed.asset_materialization is not None
    assert "dagster_ds/hub_commit" in pushed.asset_materialization.metadata

"""A plan says what a refresh would run and skip, and why, in the words the run then records."""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from dagster_ds.cache import format_size
from dagster_ds.orchestration import (
    DatasetIOManager,
    DatasetStore,
    fingerprint_refresh_schedule,
)
from dagster_ds.orchestration._changes import NOTHING_CHANGED
from dagster_ds.orchestration._plan import PLAN_TAG, Plan, plan_refresh
from tests import _fast
from tests.orchestration._chain import (
    build,
    correct_labels,
    text_and_label_assets,
    text_and_label_source,
    write_label_files,
)
from tests.orchestration.conftest import ROWS, latest, metadata_value, write_jsonl

SELECTION = dg.AssetSelection.assets("counts").upstream()
CHANGED = "dagster_ds/changed"


def _defs(corpus: Path, storage: Path, separator: str = " ") -> dg.Definitions:
    return dg.Definitions(
        assets=build(str(corpus), separator=separator).all,
        schedules=[fingerprint_refresh_schedule("refresh", "0 3 * * *", SELECTION)],
        resources={"io_manager": DatasetIOManager(base_dir=str(storage))},
    )


def _materialize(defs: dg.Definitions, instance: dg.DagsterInstance) -> None:
    job = defs.resolve_job_def("refresh_job")
    assert job.execute_in_process(instance=instance).success


def _plan(defs: dg.Definitions, instance: dg.DagsterInstance, storage: Path) -> Plan:
    return plan_refresh(
        defs.get_repository_def(), instance, SELECTION, store=DatasetStore(str(storage))
    )


def _actions(plan: Plan) -> dict[str, str]:
    return {step.asset: step.action for step in plan.steps}


def _why(plan: Plan, asset: str) -> str:
    return "; ".join(next(step.why for step in plan.steps if step.asset == asset))


def test_a_plan_says_what_the_refresh_then_runs_and_why_in_the_same_words(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    storage = tmp_path / "storage"
    defs = _defs(corpus, storage)
    first = _plan(defs, instance, storage)
    assert _actions(first) == {
        "docs": "changed",
        "cleaned": "run",
        "tokens": "run",
        "counts": "run",
    }
    _materialize(defs, instance)

    unchanged = _plan(defs, instance, storage)
    assert _actions(unchanged) == {
        "docs": "unchanged",
        "cleaned": "skip",
        "tokens": "skip",
        "counts": "skip",
    }
    assert _why(unchanged, "counts") == NOTHING_CHANGED
    assert unchanged.summary() == "plan: 0 to run, 3 to skip of 3"

    write_jsonl(corpus, [*ROWS, {"text": "A new row"}])
    planned = _plan(defs, instance, storage)
    assert _actions(planned)["cleaned"] == "run"
    assert _why(planned, "cleaned").startswith("parent 'docs': new data version (")
    assert _why(planned, "tokens") == "parent 'cleaned' is refreshed first"
    step = next(step for step in planned.steps if step.asset == "cleaned")
    assert step.estimate is not None
    assert step.estimate.runs == 1
    assert step.estimate.seconds is not None
    assert step.estimate.bytes is not None
    assert step.shards_before == 1
    assert planned.summary().startswith("plan: 3 to run, 0 to skip of 3; 1 source changed")

    # The source's changed file is read (not loaded) to name the columns that changed.
    column = "parent 'docs': column 'text' changed in 1 of 1 shards"
    assert _why(planned, "cleaned").endswith(f"; {column}")
    read = f"read 1 changed file ({format_size(corpus.stat().st_size)})"
    assert _why(planned, "docs").endswith(f"; {read} to name its changed columns")

    calls_before = len(body_calls())
    _materialize(defs, instance)
    assert metadata_value(latest(instance, "cleaned"), CHANGED) == _why(planned, "cleaned")
    assert sorted(body_calls()[calls_before:]) == ["cleaned", "counts", "tokens"]


@pytest.mark.usefixtures("body_calls")
def test_a_code_change_is_said_as_the_run_says_it_and_a_stored_recipe_is_skipped(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path
) -> None:
    storage = tmp_path / "storage"
    _materialize(_defs(corpus, storage), instance)
    _materialize(_defs(corpus, storage, separator=","), instance)

    back = _defs(corpus, storage)  # the first code again: its recipe is stored
    planned = _plan(back, instance, storage)
    assert _actions(planned) == {
        "docs": "unchanged",
        "cleaned": "skip",
        "tokens": "skip",
        "counts": "run",
    }
    assert _why(planned, "tokens") == NOTHING_CHANGED
    assert _why(planned, "counts") == "parent 'tokens' is refreshed first"

    edited = _defs(corpus, storage, separator="-")
    planned = _plan(edited, instance, storage)
    assert _actions(planned)["tokens"] == "run"
    _materialize(edited, instance)
    assert metadata_value(latest(instance, "tokens"), CHANGED) == _why(planned, "tokens")
    assert "separator" in _why(planned, "tokens")


def _files(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and the hash of its bytes."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _events(instance: dg.DagsterInstance) -> int:
    return instance.event_log_storage.get_maximum_record_id() or 0


@pytest.mark.usefixtures("body_calls")
def test_a_plan_writes_nothing_to_the_store_or_the_instance(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path
) -> None:
    storage = tmp_path / "storage"
    _materialize(_defs(corpus, storage), instance)
    write_jsonl(corpus, [*ROWS, {"text": "Another row"}])  # a changed source: hashed by the plan
    os.utime(corpus, (time.time() - 60, time.time() - 60))  # not racy: its digest is recordable
    files, events, runs = _files(storage), _events(instance), instance.get_runs_count()

    plan = _plan(_defs(corpus, storage, separator=","), instance, storage)

    assert _actions(plan)["cleaned"] == "run"
    assert _files(storage) == files
    assert (_events(instance), instance.get_runs_count()) == (events, runs)


def _tick(defs: dg.Definitions, instance: dg.DagsterInstance) -> dg.TickData:  # pyright: ignore
    repository = defs.get_repository_def()
    context = dg.build_schedule_context(instance=instance, repository_def=repository)
    return repository.get_schedule_def("refresh").evaluate_tick(context)


@pytest.mark.usefixtures("body_calls")
def test_a_refresh_tick_says_the_plan_in_its_skip_reason_and_run_tags(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path
) -> None:
    storage = tmp_path / "storage"
    defs = _defs(corpus, storage)
    _materialize(defs, instance)
    skipped = _tick(defs, instance)
    assert not skipped.run_requests
    assert "plan: 0 to run, 3 to skip of 3" in str(skipped.skip_message)
    assert f"counts: skip: {NOTHING_CHANGED}" in str(skipped.skip_message)

    edited = _defs(corpus, storage, separator=",")
    (request,) = _tick(edited, instance).run_requests or []
    assert request.tags[PLAN_TAG].startswith("plan: 2 to run, 1 to skip of 3; estimate ~")


LOCATION = """
import os
import time

import dagster as dg

from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source

HOLD = {hold!r}
STARTED = {started!r}
docs = dataset_source("docs", "json", data_files={corpus!r})


@dataset_asset
def cleaned(docs: Dataset) -> Dataset:
    return docs.map(lambda row: {{"text": row["text"].lower()}})


@dataset_asset
def tokens(cleaned: Dataset) -> Dataset:
    with open(STARTED, "w") as started:
        started.write("tokens")
    while os.path.exists(HOLD):
        time.sleep(0.05)
    return cleaned.map(lambda row: {{"tokens": row["text"].split()}})


@dataset_asset
def counts(tokens: Dataset) -> Dataset:
    return tokens.map(lambda row: {{"n": len(row["tokens"])}})


defs = dg.Definitions(
    assets=[docs, cleaned, tokens, counts],
    resources={{"io_manager": DatasetIOManager(base_dir={storage!r})}},
)
"""

REFRESH = """
import importlib.util, sys
import dagster as dg
spec = importlib.util.spec_from_file_location("location", sys.argv[1])
location = importlib.util.module_from_spec(spec)
spec.loader.exec_module(location)
job = location.defs.resolve_implicit_global_asset_job_def()
with dg.DagsterInstance.get() as instance:
    assert job.execute_in_process(instance=instance).success
"""


def _location(tmp_path: Path, corpus: Path, storage: Path) -> tuple[Path, dg.Definitions]:
    path = tmp_path / "location.py"
    path.write_text(
        LOCATION.format(
            hold=str(tmp_path / "hold"),
            started=str(tmp_path / "started"),
            corpus=str(corpus),
            storage=str(storage),
        )
    )
    namespace: dict[str, object] = {"__name__": "location"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    defs = namespace["defs"]
    assert isinstance(defs, dg.Definitions)
    return path, defs


@pytest.mark.filterwarnings("ignore::dagster_ds.errors.HiddenInputWarning")
def test_a_plan_during_a_refresh_in_another_process_is_consistent(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path
) -> None:
    storage = tmp_path / "storage"
    path, defs = _location(tmp_path, corpus, storage)
    selection = dg.AssetSelection.all()

    def plan() -> dict[str, str]:
        found = plan_refresh(
            defs.get_repository_def(), instance, selection, store=DatasetStore(str(storage))
        )
        return _actions(found)

    job = defs.resolve_implicit_global_asset_job_def()
    assert job.execute_in_process(instance=instance).success
    write_jsonl(corpus, [*ROWS, {"text": "Changed while planning"}])
    (tmp_path / "hold").touch()
    (tmp_path / "started").unlink()
    running = _fast.Popen([sys.executable, "-c", REFRESH, str(path)], env=os.environ)
    try:
        while not (tmp_path / "started").exists() and running.poll() is None:
            time.sleep(0.05)
        # `cleaned` is stored and recorded; `tokens` is running: planned as stale as it is.
        assert plan() == {"docs": "unchanged", "cleaned": "skip", "tokens": "run", "counts": "run"}
        (tmp_path / "hold").unlink()
        seen = []
        while running.poll() is None:
            seen.append(plan())
    finally:
        (tmp_path / "hold").unlink(missing_ok=True)
        assert running.wait() == 0
    after = {"docs": "unchanged", "cleaned": "skip", "tokens": "skip", "counts": "skip"}
    during = {"docs": "unchanged", "cleaned": "skip", "tokens": "skip", "counts": "run"}
    before = {"docs": "unchanged", "cleaned": "skip", "tokens": "run", "counts": "run"}
    assert all(found in (before, during, after) for found in seen)
    assert plan() == after


def test_a_partitioned_asset_is_planned_partition_by_partition(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    from tests.orchestration._daily import build as build_daily

    data, store = tmp_path / "days", tmp_path / "store"
    daily = build_daily(data, end="2024-01-04")
    days = daily.days.get_partition_keys()
    for day in days:
        write_jsonl(data / f"{day}.jsonl", [{"id": f"{day}/0", "text": f" Text of {day} "}])
    daily.run(instance, str(store), daily.docs)
    for day in days:
        daily.run(instance, str(store), daily.cleaned, day)
    write_jsonl(data / f"{days[1]}.jsonl", [{"id": f"{days[1]}/0", "text": "Rewritten"}])
    defs = dg.Definitions(
        assets=daily.all, resources={"io_manager": DatasetIOManager(base_dir=str(store))}
    )

    plan = plan_refresh(
        defs.get_repository_def(),
        instance,
        dg.AssetSelection.assets("cleaned"),
        store=DatasetStore(str(store)),
        lookback=len(days),
    )

    by_asset = {entry["asset"]: entry for entry in plan.to_json()["assets"]}
    assert by_asset["cleaned"] == {
        "asset": "cleaned",
        "source": False,
        "run": [days[1]],
        "skip": [days[0], days[2]],
    }
    assert by_asset["docs"]["changed"] == [days[1]]
    (run,) = plan.runs
    assert run.why[0].startswith("parent 'docs': new data version (")
    assert run.estimate is not None
    assert run.estimate.runs == 1  # its own partition's earlier run
    calls = len(body_calls())
    daily.run(instance, str(store), daily.docs)
    daily.run(instance, str(store), daily.cleaned, days[1])
    changed = metadata_value(_latest_partition(instance, "cleaned", days[1]), CHANGED)
    assert changed == "; ".join(run.why)
    assert body_calls()[calls:] == [f"cleaned:{days[1]}"]


def _latest_partition(
    instance: dg.DagsterInstance, key: str, partition: str
) -> dg.AssetMaterialization:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(key), asset_partitions=[partition]), limit=1
    ).records
    assert records[0].asset_materialization is not None
    return records[0].asset_materialization


def _plan_writing_nothing(
    defs: dg.Definitions, instance: dg.DagsterInstance, storage: Path, selection: dg.AssetSelection
) -> Plan:
    """The plan of ``selection``, checked to have written nothing to the store or the instance."""
    files, events = _files(storage), _events(instance)
    plan = plan_refresh(
        defs.get_repository_def(), instance, selection, store=DatasetStore(str(storage))
    )
    assert (_files(storage), _events(instance)) == (files, events)
    return plan


def _label_assets(folder: Path) -> list[dg.AssetsDefinition]:
    return text_and_label_assets(sorted(str(path) for path in folder.glob("*.jsonl")))


def test_a_plan_names_the_parent_columns_that_changed_and_what_their_readers_reuse(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    folder, storage = tmp_path / "data", tmp_path / "storage"
    write_label_files(folder)
    assets = _label_assets(folder)
    resources = {"io_manager": DatasetIOManager(base_dir=str(storage))}
    defs = dg.Definitions(assets=assets, resources=resources)
    assert dg.materialize(assets, instance=instance, resources=resources).success
    # A label corrected in one file, and the parent refreshed (its own schedule, say).
    correct_labels(folder)
    assert dg.materialize(assets, instance=instance, resources=resources, selection=["raw"]).success

    plan = _plan_writing_nothing(defs, instance, storage, dg.AssetSelection.assets("lengths"))

    (step,) = plan.steps
    assert step.action == "run"
    column = "parent 'raw': column 'label' changed in 1 of 3 shards"
    planned = "map writing 'n_chars' reads only 'text': will reuse 1 of 1 changed shards"
    assert step.why[-2:] == (column, f"{planned} by their read columns (3 in all)")

    calls = len(body_calls())
    assert dg.materialize(
        assets, instance=instance, resources=resources, selection=["lengths"]
    ).success
    assert body_calls()[calls:] == []  # reused, as planned
    reused = "'n_chars' reads only 'text': reused 1 of 1 changed shards (3 in all)"
    changed = metadata_value(latest(instance, "lengths"), CHANGED)
    assert changed == "; ".join([*step.why[:-1], reused])  # the plan's words, then the run's


def _big_part(folder: Path, index: int, label: int) -> None:
    """A JSON Lines file over the default shard size (1 MiB): a shard of its own."""
    rows = [{"text": f"t{index}-{i}-" + "x" * 100, "label": label} for i in range(9_000)]
    write_jsonl(folder / f"part-{index}.jsonl", rows)


def test_a_plan_reads_a_changed_source_file_to_name_its_columns_and_forecasts_the_run(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    folder, storage = tmp_path / "data", tmp_path / "storage"
    for index in range(3):
        _big_part(folder, index, label=0)
    assets = text_and_label_source(str(folder / "*.jsonl"))
    resources = {"io_manager": DatasetIOManager(base_dir=str(storage))}
    defs = dg.Definitions(assets=assets, resources=resources)
    assert dg.materialize(assets, instance=instance, resources=resources).success
    # A label corrected in one file, not loaded since: no record has its columns.
    _big_part(folder, 1, label=1)

    plan = _plan_writing_nothing(defs, instance, storage, dg.AssetSelection.assets("lengths"))

    source, step = plan.steps
    size = format_size((folder / "part-1.jsonl").stat().st_size)
    assert source.why[-1] == f"read 1 changed file ({size}) to name its changed columns"
    assert step.action == "run"
    column = "parent 'raw': column 'label' changed in 1 of 3 shards"
    planned = "map writing 'n_chars' reads only 'text': will reuse 1 of 1 changed shards"
    assert step.why[-2:] == (column, f"{planned} by their read columns (3 in all)")

    calls = len(body_calls())
    assert dg.materialize(assets, instance=instance, resources=resources).success
    assert body_calls()[calls:] == []  # reused, as planned: n_chars ran on no shard
    reused = "'n_chars' reads only 'text': reused 1 of 1 changed shards (3 in all)"
    changed = metadata_value(latest(instance, "lengths"), CHANGED)
    assert changed == "; ".join([*step.why[:-1], reused])  # the plan's words, then the run's

"""Refreshes that launch nothing when nothing changed: the schedule's and the sensor's ticks.

The scheduler daemon's tick is driven through Dagster's internal loop body
(`launch_scheduled_runs`), as Dagster's own scheduler tests do (the daemon
process would wait for a cron minute): hence the few `dagster._core` imports.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from dagster_ds.orchestration import (
    DatasetIOManager,
    fingerprint_refresh_schedule,
    fingerprint_refresh_sensor,
)
from tests.orchestration._chain import build
from tests.orchestration.conftest import ROWS, write_jsonl

SELECTION = dg.AssetSelection.assets("counts").upstream()


def _defs(corpus: Path, storage: Path, separator: str = " ") -> dg.Definitions:
    return dg.Definitions(
        assets=build(str(corpus), separator=separator).all,
        schedules=[fingerprint_refresh_schedule("refresh", "0 3 * * *", SELECTION)],
        sensors=[fingerprint_refresh_sensor("watch", SELECTION)],
        resources={"io_manager": DatasetIOManager(base_dir=str(storage))},
    )


def _schedule_tick(defs: dg.Definitions, instance: dg.DagsterInstance) -> tuple[list, str | None]:
    """What the scheduler daemon gets from one tick: run requests, or a skip message."""
    repository = defs.get_repository_def()
    context = dg.build_schedule_context(instance=instance, repository_def=repository)
    data = repository.get_schedule_def("refresh").evaluate_tick(context)
    return list(data.run_requests or []), data.skip_message


def _sensor_tick(defs: dg.Definitions, instance: dg.DagsterInstance) -> tuple[list, str | None]:
    repository = defs.get_repository_def()
    context = dg.build_sensor_context(instance=instance, repository_def=repository)
    data = repository.get_sensor_def("watch").evaluate_tick(context)
    return list(data.run_requests or []), data.skip_message


def _launch(defs: dg.Definitions, instance: dg.DagsterInstance, request: dg.RunRequest) -> None:
    """Run what the tick requested, as the daemon would launch it."""
    job = defs.resolve_job_def("refresh_job")
    assert job.execute_in_process(
        instance=instance, asset_selection=list(request.asset_selection or [])
    ).success


def _keys(request: dg.RunRequest) -> set[str]:
    return {key.to_user_string() for key in request.asset_selection or []}


LOCATION = """
import dagster as dg
from dagster_ds.orchestration import DatasetIOManager, fingerprint_refresh_schedule
from tests.orchestration._chain import build

chain = build({corpus!r})
defs = dg.Definitions(
    assets=chain.all,
    schedules=[
        fingerprint_refresh_schedule(
            "refresh", "0 3 * * *", dg.AssetSelection.assets("counts").upstream()
        )
    ],
    resources={{"io_manager": DatasetIOManager(base_dir={storage!r})}},
)
"""


def _daemon_ticks(location: Path, instance: dg.DagsterInstance) -> list[tuple[str, str | None]]:
    """The ticks the scheduler daemon records for the schedule of a code location file."""
    from dagster._core.remote_origin import InProcessCodeLocationOrigin  # noqa: TID251
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin  # noqa: TID251
    from dagster._core.workspace.context import WorkspaceProcessContext  # noqa: TID251
    from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget  # noqa: TID251
    from dagster._scheduler.scheduler import launch_scheduled_runs

    origin = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(python_file=str(location), attribute="defs", working_directory=".")
    )
    with WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget(origin)) as context:
        entry = next(iter(context.create_request_context().get_code_location_entries().values()))
        assert entry.code_location is not None, entry.load_error
        repository = next(iter(entry.code_location.get_repositories().values()))
        schedule = repository.get_schedule("refresh")
        instance.start_schedule(schedule)
        tomorrow = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)
        list(
            launch_scheduled_runs(
                context, logging.getLogger("test"), end_datetime_utc=tomorrow, iteration_times={}
            )
        )
        ticks = instance.get_ticks(schedule.get_remote_origin_id(), schedule.selector_id)
        return [(tick.status.value, tick.skip_reason) for tick in ticks]


# Dagster's own schedule snapshot (in the daemon's code location) reads a deprecated property.
@pytest.mark.filterwarnings("ignore:Property `ScheduleDefinition.environment_vars`")
def test_a_tick_with_nothing_changed_launches_no_run_and_says_why(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    storage = tmp_path / "storage"
    defs = _defs(corpus, storage)
    requests, _ = _schedule_tick(defs, instance)
    assert [_keys(request) for request in requests] == [{"docs", "cleaned", "tokens", "counts"}]
    _launch(defs, instance, requests[0])
    runs = instance.get_runs_count()

    for tick in (_schedule_tick, _sensor_tick):
        requests, skipped = tick(defs, instance)
        assert requests == []
        assert skipped is not None
        lines = skipped.splitlines()
        assert lines[0] == "0 stale assets of 3: nothing to do"
        assert lines[1] == "plan: 0 to run, 3 to skip of 3"  # what `dagster-ds plan` says
        assert lines[2].startswith("  docs (source): unchanged (data version ")
        assert [line.split(":")[0].strip() for line in lines[3:]] == ["cleaned", "tokens", "counts"]
        assert all(": skip: nothing changed (recipe unchanged" in line for line in lines[3:])

    location = tmp_path / "location.py"
    location.write_text(LOCATION.format(corpus=str(corpus), storage=str(storage)))
    ticks = _daemon_ticks(location, instance)  # the daemon's own tick
    assert [status for status, _ in ticks] == ["SKIPPED"]
    assert (ticks[0][1] or "").startswith("0 stale assets of 3: nothing to do")
    assert instance.get_runs_count() == runs  # no run launched
    assert body_calls() == ["cleaned", "tokens", "counts"]


def test_a_changed_source_or_transform_requests_only_what_is_stale(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    storage = tmp_path / "storage"
    defs = _defs(corpus, storage)
    _launch(defs, instance, _schedule_tick(defs, instance)[0][0])

    changed = _defs(corpus, storage, separator=",")  # only `tokens` uses the separator
    requests, _ = _sensor_tick(changed, instance)
    assert [_keys(request) for request in requests] == [{"tokens", "counts"}]
    _launch(changed, instance, requests[0])
    assert _sensor_tick(changed, instance)[0] == []

    write_jsonl(corpus, [*ROWS, {"text": "A new row"}])
    requests, _ = _schedule_tick(changed, instance)
    assert [_keys(request) for request in requests] == [{"docs", "cleaned", "tokens", "counts"}]
    _launch(changed, instance, requests[0])
    assert _schedule_tick(changed, instance)[0] == []
    chain = ["cleaned", "tokens", "counts"]
    assert body_calls() == [*chain, "tokens", "counts", *chain]


def test_a_partitioned_refresh_requests_only_the_stale_partitions(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    from tests.orchestration._daily import build as build_daily

    data, store = tmp_path / "days", tmp_path / "store"
    daily = build_daily(data, end="2024-01-04")
    days = daily.days.get_partition_keys()
    for day in days:
        write_jsonl(data / f"{day}.jsonl", [{"id": f"{day}/0", "text": f" Text of {day} "}])
    selection = dg.AssetSelection.assets("lengths").upstream()
    defs = dg.Definitions(
        assets=daily.all,
        schedules=[fingerprint_refresh_schedule("refresh", "0 3 * * *", selection)],
        sensors=[fingerprint_refresh_sensor("watch", selection)],
        resources={"io_manager": DatasetIOManager(base_dir=str(store))},
    )
    daily.run(instance, str(store), daily.docs)  # observes every partition
    for day in days:  # the backfill, and the reader of all days
        daily.run(instance, str(store), daily.cleaned, day)
    daily.run(instance, str(store), daily.lengths)

    def tick() -> tuple[list[dg.RunRequest], str | None]:
        repository = defs.get_repository_def()
        context = dg.build_schedule_context(
            instance=instance,
            repository_def=repository,
            scheduled_execution_time=datetime.datetime(2024, 1, 4, 3, tzinfo=datetime.UTC),
        )
        data_ = repository.get_schedule_def("refresh").evaluate_tick(context)
        return list(data_.run_requests or []), data_.skip_message

    def launch(request: dg.RunRequest) -> None:
        job = defs.resolve_job_def("refresh_job")
        assert job.execute_in_process(
            instance=instance,
            partition_key=request.partition_key,
            asset_selection=list(request.asset_selection or []),
        ).success

    requests, skipped = tick()
    assert requests == [], skipped
    assert (skipped or "").splitlines()[0] == "0 stale assets of 2: nothing to do"
    assert "  cleaned [2024-01-03]: skip: nothing changed (recipe " in (skipped or "")
    calls = len(body_calls())

    write_jsonl(data / "2024-01-03.jsonl", [{"id": "2024-01-03/0", "text": "Rewritten"}])
    requests, _ = tick()  # the latest day changed: its partition only; the reader waits
    assert [(r.partition_key, _keys(r)) for r in requests] == [("2024-01-03", {"docs", "cleaned"})]
    launch(requests[0])
    assert body_calls()[calls:] == ["cleaned:2024-01-03"]
    requests, _ = _sensor_tick(defs, instance)  # then the reader of every day
    assert [(r.partition_key, _keys(r)) for r in requests] == [(None, {"lengths"})]
    launch(requests[0])
    assert tick()[0] == []

    write_jsonl(data / "2024-01-01.jsonl", [{"id": "2024-01-01/0", "text": "Old day, edited"}])
    assert tick()[0] == []  # outside the lookback (the latest day): not this schedule's job
    assert body_calls()[calls:] == ["cleaned:2024-01-03", "lengths", "row:2024-01-03/0"]

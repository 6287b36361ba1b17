"""fingerprint_changed(): runs are requested only where a fingerprint or a transform changed."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg

from dagster_ds.orchestration import (
    DatasetIOManager,
    dataset_source,
    fingerprint_changed,
    fingerprint_refresh_schedule,
    fingerprint_source_sensor,
)
from tests.orchestration._chain import Chain, build
from tests.orchestration.conftest import latest, metadata_value

CHAIN = ("cleaned", "tokens", "counts")


class Ticks:
    """Successive evaluations of the automation conditions, as the automation sensor does."""

    def __init__(self, instance: dg.DagsterInstance, storage: Path) -> None:
        self.instance = instance
        self.resources = {"io_manager": DatasetIOManager(base_dir=str(storage))}
        self.cursor: Any = None

    def requested(self, chain: Chain) -> set[str]:
        return self.requested_assets(chain.all)

    def requested_assets(self, assets: list[Any]) -> set[str]:
        keys = [asset.key for asset in assets]
        result = dg.evaluate_automation_conditions(
            defs=dg.Definitions(assets=assets, resources=self.resources),
            instance=self.instance,
            # (Dagster's default selection uses a beta parameter, which warns.)
            asset_selection=dg.AssetSelection.assets(*keys),
            cursor=self.cursor,
        )
        self.cursor = result.cursor
        return {key.to_user_string() for key in keys if result.get_num_requested(key)}

    def run(self, chain: Chain, selection: list[Any] | None = None) -> None:
        self.run_assets(chain.all, selection)

    def run_assets(self, assets: list[Any], selection: list[Any] | None = None) -> None:
        result = dg.materialize(
            assets,
            instance=self.instance,
            resources=self.resources,
            selection=selection or assets,
        )
        assert result.success


def test_requests_missing_assets_then_nothing_while_nothing_changes(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    chain = build(str(corpus), condition=fingerprint_changed())
    ticks = Ticks(instance, tmp_path / "storage")
    assert ticks.requested(chain) == set()  # the source was never observed
    ticks.run(chain, [chain.docs])
    assert ticks.requested(chain) == set(CHAIN)  # missing
    ticks.run(chain)
    assert ticks.requested(chain) == set()
    ticks.run(chain)  # every asset skipped: same data versions
    assert metadata_value(latest(instance, "counts"), "dagster_ds/cache") == "hit"
    assert ticks.requested(chain) == set()
    assert body_calls() == list(CHAIN)


def test_eager_would_rerun_children_of_a_skipped_parent(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    """The reason for fingerprint_changed: eager() fires on any parent materialization."""
    chain = build(str(corpus), condition=dg.AutomationCondition.eager())
    ticks = Ticks(instance, tmp_path / "storage")
    ticks.run(chain)
    ticks.requested(chain)
    ticks.run(chain, [chain.docs, chain.cleaned])  # `cleaned` skipped: same data version
    assert ticks.requested(chain) == {"tokens", "counts"}  # fingerprint_changed: none


def test_a_changed_source_requests_exactly_its_downstream_assets(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    chain = build(str(corpus), condition=fingerprint_changed())
    other = tmp_path / "other" / "docs.jsonl"
    other.parent.mkdir()
    other.write_bytes(corpus.read_bytes())
    unrelated = build(str(other), condition=fingerprint_changed())
    ticks = Ticks(instance, tmp_path / "storage")
    ticks.run(chain)
    ticks.requested(chain)

    corpus.write_bytes(corpus.read_bytes())  # rewritten, same content: same fingerprint
    ticks.run(chain, [chain.docs])
    assert ticks.requested(chain) == set()

    with corpus.open("a") as file:
        file.write('{"text": "A new paragraph"}\n')
    ticks.run(chain, [chain.docs])
    assert ticks.requested(chain) == set(CHAIN)
    ticks.run(chain)
    assert ticks.requested(chain) == set()
    assert body_calls() == [*CHAIN, *CHAIN]
    del unrelated


def test_a_changed_transform_requests_it_and_its_downstream_only(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    ticks = Ticks(instance, tmp_path / "storage")
    ticks.run(build(str(corpus), condition=fingerprint_changed()))
    changed = build(str(corpus), condition=fingerprint_changed(), separator="o")
    ticks.requested(build(str(corpus), condition=fingerprint_changed()))
    assert ticks.requested(changed) == {"tokens", "counts"}
    ticks.run(changed, [changed.tokens, changed.counts])
    assert ticks.requested(changed) == set()
    assert body_calls() == [*CHAIN, "tokens", "counts"]


def test_the_refresh_schedule_observes_sources_and_materializes_the_selection(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    chain = build(str(corpus))
    schedule = fingerprint_refresh_schedule(
        "refresh", "0 3 * * *", dg.AssetSelection.assets("counts").upstream()
    )
    defs = dg.Definitions(
        assets=chain.all,
        schedules=[schedule],
        resources={"io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage"))},
    )
    job = defs.resolve_job_def("refresh_job")
    assert job.execute_in_process(instance=instance).success
    result = job.execute_in_process(instance=instance)
    assert result.success
    observed = [event.asset_key for event in result.get_asset_observation_events()]
    assert observed == [dg.AssetKey("docs")]
    assert body_calls() == list(CHAIN)
    assert metadata_value(latest(instance, "counts"), "dagster_ds/cache") == "hit"


def test_a_source_with_a_cron_condition_is_observed_on_each_tick(
    instance: dg.DagsterInstance, corpus: Path
) -> None:
    source = dataset_source(
        "docs",
        "json",
        data_files=str(corpus),
        automation_condition=dg.AutomationCondition.cron_tick_passed("*/15 * * * *"),
    )
    cursor: Any = None
    requested = []
    for minute in (1, 6, 16, 21, 31):
        result = dg.evaluate_automation_conditions(
            defs=dg.Definitions(assets=[source]),
            instance=instance,
            asset_selection=dg.AssetSelection.assets(source.key),
            evaluation_time=datetime.datetime(2026, 1, 1, 0, minute),
            cursor=cursor,
        )
        cursor = result.cursor
        requested.append(result.total_requested)
    assert requested == [0, 0, 1, 0, 1]  # 00:15 and 00:30


def _observe_tick(defs: dg.Definitions, instance: dg.DagsterInstance) -> str | None:
    """One tick of the source sensor, its events recorded as the sensor daemon records them.

    Returns its skip reason, or None when it recorded observations.
    """
    repository = defs.get_repository_def()
    context = dg.build_sensor_context(instance=instance, repository_def=repository)
    data = repository.get_sensor_def("observe").evaluate_tick(context)
    assert not data.run_requests
    for event in data.asset_events:
        instance.report_runless_asset_event(event)
    return None if data.asset_events else data.skip_message


def test_the_automation_path_launches_no_run_at_all_when_nothing_changed(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    chain = build(str(corpus), condition=fingerprint_changed())
    ticks = Ticks(instance, tmp_path / "storage")
    sensor = fingerprint_source_sensor("observe", dg.AssetSelection.assets("counts"))
    defs = dg.Definitions(assets=chain.all, sensors=[sensor], resources=ticks.resources)

    assert _observe_tick(defs, instance) is None  # never observed: an observation, no run
    assert instance.get_runs_count() == 0
    assert ticks.requested(chain) == set(CHAIN)  # the first evaluation: the stale assets
    ticks.run(chain, [chain.cleaned, chain.tokens, chain.counts])
    runs = instance.get_runs_count()

    for _ in range(2):  # nothing changed: no observation, no request, no run
        skipped = _observe_tick(defs, instance) or ""
        assert skipped.splitlines()[0] == "0 of 1 sources changed"
        assert skipped.splitlines()[1].startswith("  docs: unchanged (data version ")
        assert ticks.requested(chain) == set()
    assert instance.get_runs_count() == runs

    corpus.write_bytes(corpus.read_bytes())  # rewritten with the same content: unchanged
    assert _observe_tick(defs, instance) is not None
    with corpus.open("a") as file:
        file.write('{"text": "A new paragraph"}\n')
    assert _observe_tick(defs, instance) is None
    assert ticks.requested(chain) == set(CHAIN)
    assert instance.get_runs_count() == runs
    assert body_calls() == list(CHAIN)


def test_the_automation_path_per_partition_requests_only_a_changed_day(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    from tests.orchestration._daily import build as build_daily
    from tests.orchestration.conftest import write_jsonl

    data = tmp_path / "days"
    daily = build_daily(data, end="2024-01-04")
    for day in daily.days.get_partition_keys():
        write_jsonl(data / f"{day}.jsonl", [{"id": f"{day}/0", "text": f"Text of {day}"}])
    cleaned = daily.cleaned.with_attributes(automation_condition=fingerprint_changed())
    assets = [daily.docs, cleaned]
    ticks = Ticks(instance, tmp_path / "storage")
    sensor = fingerprint_source_sensor("observe", dg.AssetSelection.assets("cleaned"))
    defs = dg.Definitions(assets=assets, sensors=[sensor], resources=ticks.resources)

    def requested() -> list[str]:
        result = dg.evaluate_automation_conditions(
            defs=defs,
            instance=instance,
            asset_selection=dg.AssetSelection.assets(cleaned.key),
            cursor=ticks.cursor,
        )
        ticks.cursor = result.cursor
        return sorted(str(key) for key in result.get_requested_partitions(cleaned.key))

    assert _observe_tick(defs, instance) is None  # the latest day, never observed
    assert requested() == ["2024-01-03"]  # in the latest time window, missing
    assert dg.materialize(
        assets,
        instance=instance,
        resources=ticks.resources,
        partition_key="2024-01-03",
        selection=[cleaned],
    ).success
    assert _observe_tick(defs, instance) is not None
    assert requested() == []
    write_jsonl(data / "2024-01-03.jsonl", [{"id": "2024-01-03/0", "text": "Rewritten"}])
    assert _observe_tick(defs, instance) is None
    assert requested() == ["2024-01-03"]
    assert body_calls() == ["cleaned:2024-01-03"]

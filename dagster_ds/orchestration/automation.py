"""When dataset assets refresh: an automation condition and a schedule recipe.

Two ways to keep a pipeline fresh, both doing no work when nothing changed:

- **Declarative automation.** Give assets ``automation_condition=fingerprint_changed()``
  and have the sources observed by `fingerprint_source_sensor`: it observes
  them in its own process and records an observation (no run) only for a
  source (partition) whose fingerprint changed. A run is requested only for
  assets that are missing, whose transform hash changed, or one of whose
  parents got a new data version (fingerprint); when nothing changed, neither
  the sensor nor the automation sensor launches a run. (Observing the sources
  with ``AutomationCondition.cron_tick_passed`` on the `dataset_source` works
  too, but each observation is a run, changed or not.) The default automation
  sensor evaluates the conditions (run ``dagster dev``).
- **A schedule** (`fingerprint_refresh_schedule`) or **a sensor**
  (`fingerprint_refresh_sensor`): each tick observes the dataset sources in the
  evaluating process and requests a run of the stale assets only (missing, new
  code version, or a parent with a new data version). A tick in which nothing
  changed launches no run; the tick's skip reason says ``0 stale assets`` and
  why, per asset, then the plan (what ``dagster-ds plan`` prints); a run's
  ``dagster_ds/plan`` tag is the plan's summary. Partitioned assets are
  refreshed per partition: one run per stale partition among the recent ones
  (the last ``lookback`` time windows, every static or dynamic key).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from typing import cast

import dagster as dg

from dagster_ds.orchestration._plan import plan_refresh
from dagster_ds.orchestration._refresh import load_source_version, refresh_plan

__all__ = [
    "fingerprint_changed",
    "fingerprint_refresh_schedule",
    "fingerprint_refresh_sensor",
    "fingerprint_source_sensor",
]


def fingerprint_changed() -> dg.AutomationCondition:
    """Request an asset when it is missing, its code changed, or a parent's fingerprint changed.

    Like ``AutomationCondition.eager()``, but data-version aware: eager fires
    whenever a parent re-materializes, even with an unchanged data version (a
    skipped dataset asset); this fires only when a parent's data version (its
    fingerprint) changed, or the asset's code version (transform hash) changed,
    or the asset is missing (also at the first evaluation, where eager waits).
    Assets with missing or in-progress parents, or in progress themselves, wait.

    Example:
        >>> import dagster as dg
        >>> fingerprint_changed().get_label()
        'fingerprint_changed'
    """
    parent_changed = dg.AutomationCondition.any_deps_match(
        (
            dg.AutomationCondition.data_version_changed()
            & ~dg.AutomationCondition.executed_with_root_target()
        ).with_label("data_version_changed_without_root")
        | dg.AutomationCondition.will_be_requested()
    ).with_label("any_deps_fingerprint_changed")
    # (Dagster's types: code_version_changed() is typed for asset keys only.)
    changed = cast(
        "dg.AutomationCondition[dg.AssetOrCheckKey]",
        dg.AutomationCondition.code_version_changed() | parent_changed,
    )
    # Missing: requested from the first evaluation on, but not again after a failed run.
    missing = dg.AutomationCondition.missing() & ~dg.AutomationCondition.execution_failed()
    return (
        dg.AutomationCondition.in_latest_time_window()
        & (missing.with_label("missing") | changed.since_last_handled())
        & ~dg.AutomationCondition.any_deps_missing()
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
    ).with_label("fingerprint_changed")


def fingerprint_refresh_schedule(
    name: str,
    cron_schedule: str,
    selection: dg.AssetSelection | str,
    *,
    execution_timezone: str | None = None,
    description: str | None = None,
    tags: Mapping[str, str] | None = None,
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.STOPPED,
    lookback: int = 1,
) -> dg.ScheduleDefinition:
    """A schedule that refreshes the stale assets of ``selection``, and launches nothing else.

    Each tick observes the dataset sources upstream of the selection (in the
    evaluating process: unchanged files are hashed, not parsed) and requests a
    run of the stale assets only, with the sources that changed; when nothing
    is stale, the tick is skipped with ``0 stale assets of N`` and one line per
    asset saying why. The schedule's job (``<name>_job``) refreshes the whole
    selection when launched by hand; its unchanged assets are skipped by
    fingerprint.

    Partitioned assets are refreshed by partition: the tick considers the last
    ``lookback`` time windows as of its scheduled time (every key of static
    and dynamic partitions) and requests one run per stale partition, with
    the assets stale in it. An asset whose stale parent runs in another of the
    tick's runs (an unpartitioned reader of a refreshed partition) waits for
    the next tick.

    Args:
        name: The schedule's name; its job is named ``<name>_job``.
        cron_schedule: When to run, e.g. ``"0 3 * * *"``.
        selection: The assets to refresh (an `AssetSelection` or a selection string).
        execution_timezone: The cron's timezone (default UTC).
        description: Shown in the UI.
        tags: Tags of each run.
        default_status: Whether the schedule starts running when deployed.
        lookback: How many of the latest time windows of time-partitioned assets
            a tick considers (default: the latest one).

    Example:
        >>> import dagster as dg
        >>> nightly = fingerprint_refresh_schedule("nightly", "0 3 * * *", dg.AssetSelection.all())
        >>> nightly.job_name
        'nightly_job'
    """
    assets, job = _refresh_job(name, selection, description, tags)

    def evaluate(
        context: dg.ScheduleEvaluationContext,
    ) -> Iterator[dg.RunRequest | dg.SkipReason]:
        now = _tick_time(context)
        plan = plan_refresh(
            context.repository_def,
            context.instance,
            assets,
            now=now,
            lookback=lookback,
            observe=load_source_version,
            read_sources=False,
        )
        yield from _requests(plan.run_requests(f"{name}@{now.isoformat()}", tags=dict(tags or {})))

    return dg.ScheduleDefinition(
        name=name,
        cron_schedule=cron_schedule,
        job=job,
        execution_fn=evaluate,
        execution_timezone=execution_timezone,
        description=description,
        default_status=default_status,
    )


def fingerprint_refresh_sensor(
    name: str,
    selection: dg.AssetSelection | str,
    *,
    minimum_interval_seconds: int = 300,
    description: str | None = None,
    tags: Mapping[str, str] | None = None,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    lookback: int = 1,
) -> dg.SensorDefinition:
    """A sensor that refreshes the stale assets of ``selection`` when a source or code changed.

    The same decision as `fingerprint_refresh_schedule`, every
    ``minimum_interval_seconds``: the sources are observed in the sensor's
    process, and a run is requested only for stale assets (partitions); otherwise
    the tick is skipped with ``0 stale assets of N`` and the reason per asset.

    Example:
        >>> import dagster as dg
        >>> watch = fingerprint_refresh_sensor("docs_changed", dg.AssetSelection.all())
        >>> watch.job_name
        'docs_changed_job'
    """
    assets, job = _refresh_job(name, selection, description, tags)

    def evaluate(context: dg.SensorEvaluationContext) -> Iterator[dg.RunRequest | dg.SkipReason]:
        repository = context.repository_def
        if repository is None:
            yield dg.SkipReason("the sensor was evaluated without its definitions")
            return
        now = datetime.datetime.now(datetime.UTC)
        plan = plan_refresh(
            repository,
            context.instance,
            assets,
            now=now,
            lookback=lookback,
            observe=load_source_version,
            read_sources=False,
        )
        yield from _requests(plan.run_requests(f"{name}@{now.isoformat()}", tags=dict(tags or {})))

    return dg.SensorDefinition(
        name=name,
        evaluation_fn=evaluate,
        job=job,
        minimum_interval_seconds=minimum_interval_seconds,
        description=description,
        default_status=default_status,
    )


def fingerprint_source_sensor(
    name: str,
    selection: dg.AssetSelection | str,
    *,
    minimum_interval_seconds: int = 300,
    description: str | None = None,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    lookback: int = 1,
) -> dg.SensorDefinition:
    """A sensor that observes the dataset sources of ``selection``, launching no run.

    Each tick loads the sources upstream of the selection in the sensor's
    process (unchanged files are hashed, not parsed) and records an
    observation, as the sensor's own asset event, only for each source (each
    recent partition, as in `fingerprint_refresh_schedule`) whose fingerprint
    changed. Assets with `fingerprint_changed` then see the new data version
    and the automation sensor requests them; when nothing changed, the tick is
    skipped saying so, and no run is launched anywhere.

    Example:
        >>> import dagster as dg
        >>> observe = fingerprint_source_sensor("observe_docs", dg.AssetSelection.all())
        >>> observe.name
        'observe_docs'
    """
    assets = _selection(selection)

    def evaluate(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        repository = context.repository_def
        if repository is None:
            return dg.SkipReason("the sensor was evaluated without its definitions")
        now = datetime.datetime.now(datetime.UTC)
        sources = assets.upstream().upstream_source_assets()
        plan = refresh_plan(repository, context.instance, sources, now=now, lookback=lookback)
        observed = [asset for asset in plan.assets if asset.source]
        changed = plan.observations()
        if not changed:
            lines = [f"  {asset}" for asset in observed]
            return dg.SkipReason("\n".join([f"0 of {len(observed)} sources changed", *lines]))
        return dg.SensorResult(asset_events=list(changed))

    return dg.SensorDefinition(
        name=name,
        evaluation_fn=evaluate,
        minimum_interval_seconds=minimum_interval_seconds,
        description=description or f"Observe the dataset sources of {name} by content.",
        default_status=default_status,
    )


def _requests(
    found: list[dg.RunRequest] | dg.SkipReason,
) -> Iterator[dg.RunRequest | dg.SkipReason]:
    if isinstance(found, dg.SkipReason):
        yield found
    else:
        yield from found


def _tick_time(context: dg.ScheduleEvaluationContext) -> datetime.datetime:
    """The tick's scheduled time; now for a context built without one (a test's)."""
    try:
        return context.scheduled_execution_time
    except Exception:  # Dagster's check error (not a public name): no time was set
        return datetime.datetime.now(datetime.UTC)


def _selection(selection: dg.AssetSelection | str) -> dg.AssetSelection:
    return (
        selection
        if isinstance(selection, dg.AssetSelection)
        else dg.AssetSelection.from_string(selection)
    )


def _refresh_job(
    name: str,
    selection: dg.AssetSelection | str,
    description: str | None,
    tags: Mapping[str, str] | None,
) -> tuple[dg.AssetSelection, dg.UnresolvedAssetJobDefinition]:
    assets = _selection(selection)
    job = dg.define_asset_job(
        f"{name}_job",
        selection=assets | assets.upstream().upstream_source_assets(),
        description=description or f"Refresh {name}: observe sources, materialize what changed.",
        tags=tags,
    )
    return assets, job

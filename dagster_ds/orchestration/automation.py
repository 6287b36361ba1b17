"""When dataset assets refresh: an automation condition and a schedule recipe.

Two ways to keep a pipeline fresh, both doing no work when nothing changed:

- **Declarative automation.** Give assets ``automation_condition=fingerprint_changed()``
  and have the sources observed (e.g. ``automation_condition=
  dg.AutomationCondition.cron_tick_passed("0 * * * *")`` on a `dataset_source`,
  or a schedule on an observation job). A run is requested only for assets
  that are missing, whose transform hash changed, or one of whose parents got
  a new data version (fingerprint); an unchanged source requests nothing.
  The default automation sensor evaluates it (run ``dagster dev``).
- **A schedule** (`fingerprint_refresh_schedule`) or **a sensor**
  (`fingerprint_refresh_sensor`): each tick observes the dataset sources in the
  evaluating process and requests a run of the stale assets only (missing, new
  code version, or a parent with a new data version). A tick in which nothing
  changed launches no run; the tick's skip reason says ``0 stale assets`` and
  why, per asset.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import dagster as dg

from dagster_ds.orchestration._refresh import refresh_plan

__all__ = ["fingerprint_changed", "fingerprint_refresh_schedule", "fingerprint_refresh_sensor"]


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
) -> dg.ScheduleDefinition:
    """A schedule that refreshes the stale assets of ``selection``, and launches nothing else.

    Each tick observes the dataset sources upstream of the selection (in the
    evaluating process: unchanged files are hashed, not parsed) and requests a
    run of the stale assets only, with the sources that changed; when nothing
    is stale, the tick is skipped with ``0 stale assets of N`` and one line per
    asset saying why. The schedule's job (``<name>_job``) refreshes the whole
    selection when launched by hand; its unchanged assets are skipped by
    fingerprint.

    Args:
        name: The schedule's name; its job is named ``<name>_job``.
        cron_schedule: When to run, e.g. ``"0 3 * * *"``.
        selection: The assets to refresh (an `AssetSelection` or a selection string).
        execution_timezone: The cron's timezone (default UTC).
        description: Shown in the UI.
        tags: Tags of each run.
        default_status: Whether the schedule starts running when deployed.

    Example:
        >>> import dagster as dg
        >>> nightly = fingerprint_refresh_schedule("nightly", "0 3 * * *", dg.AssetSelection.all())
        >>> nightly.job_name
        'nightly_job'
    """
    assets, job = _refresh_job(name, selection, description, tags)

    def evaluate(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
        plan = refresh_plan(context.repository_def, context.instance, assets)
        return plan.run_request(tags=dict(tags or {}))

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
) -> dg.SensorDefinition:
    """A sensor that refreshes the stale assets of ``selection`` when a source or code changed.

    The same decision as `fingerprint_refresh_schedule`, every
    ``minimum_interval_seconds``: the sources are observed in the sensor's
    process, and a run is requested only for stale assets; otherwise the tick
    is skipped with ``0 stale assets of N`` and the reason per asset.

    Example:
        >>> import dagster as dg
        >>> watch = fingerprint_refresh_sensor("docs_changed", dg.AssetSelection.all())
        >>> watch.job_name
        'docs_changed_job'
    """
    assets, job = _refresh_job(name, selection, description, tags)

    def evaluate(context: dg.SensorEvaluationContext) -> dg.RunRequest | dg.SkipReason:
        repository = context.repository_def
        if repository is None:
            return dg.SkipReason("the sensor was evaluated without its definitions")
        return refresh_plan(repository, context.instance, assets).run_request(tags=dict(tags or {}))

    return dg.SensorDefinition(
        name=name,
        evaluation_fn=evaluate,
        job=job,
        minimum_interval_seconds=minimum_interval_seconds,
        description=description,
        default_status=default_status,
    )


def _refresh_job(
    name: str,
    selection: dg.AssetSelection | str,
    description: str | None,
    tags: Mapping[str, str] | None,
) -> tuple[dg.AssetSelection, dg.UnresolvedAssetJobDefinition]:
    assets = (
        selection
        if isinstance(selection, dg.AssetSelection)
        else dg.AssetSelection.from_string(selection)
    )
    job = dg.define_asset_job(
        f"{name}_job",
        selection=assets | assets.upstream().upstream_source_assets(),
        description=description or f"Refresh {name}: observe sources, materialize what changed.",
        tags=tags,
    )
    return assets, job

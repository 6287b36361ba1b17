"""When dataset assets refresh: an automation condition and a schedule recipe.

Two ways to keep a pipeline fresh, both doing no work when nothing changed:

- **Declarative automation.** Give assets ``automation_condition=fingerprint_changed()``
  and have the sources observed (e.g. ``automation_condition=
  dg.AutomationCondition.cron_tick_passed("0 * * * *")`` on a `dataset_source`,
  or a schedule on an observation job). A run is requested only for assets
  that are missing, whose transform hash changed, or one of whose parents got
  a new data version (fingerprint); an unchanged source requests nothing.
  The default automation sensor evaluates it (run ``dagster dev``).
- **A schedule** (`fingerprint_refresh_schedule`): every tick runs the whole
  selection, sources observed in the same run; each asset whose fingerprint is
  unchanged is skipped in a few milliseconds, so a tick in which nothing
  changed costs Dagster's fixed run cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import dagster as dg

__all__ = ["fingerprint_changed", "fingerprint_refresh_schedule"]


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
    """A schedule that refreshes ``selection`` and the sources upstream of it.

    Each run observes the dataset sources feeding the selection, then
    materializes the selected assets; an asset whose fingerprint is unchanged
    skips its transform (``dagster_ds/cache: hit``), so an unchanged pipeline
    refreshes in Dagster's fixed cost plus a few milliseconds per asset.

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
    return dg.ScheduleDefinition(
        name=name,
        cron_schedule=cron_schedule,
        job=job,
        execution_timezone=execution_timezone,
        description=description,
        default_status=default_status,
    )

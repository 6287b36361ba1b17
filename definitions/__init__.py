"""The example code location: ``workspace.yaml`` loads `defs` from here.

Storage: ``$DAGSTER_DS_STORAGE`` (a folder or fsspec URL), else ``dagster_ds``
in the Dagster instance's storage folder. Hub: the embedded local Hub (kept in
the instance's storage folder), or huggingface.co when ``HF_TOKEN`` and
``DAGSTER_DS_EXAMPLE_REPO`` are both set.
"""

import os
from pathlib import Path

import dagster as dg

from dagster_ds.orchestration import (
    DatasetIOManager,
    HubResource,
    fingerprint_refresh_schedule,
    fingerprint_source_sensor,
)
from dagster_ds.orchestration.components import shared_resource
from definitions.daily import DAILY_GROUP, daily_assets, days
from definitions.pipeline import GROUP, assets, checks

REFRESH_JOB = "nightly_refresh_job"
DAILY_REFRESH_JOB = "daily_refresh_job"


def hub_resource() -> HubResource:
    """The real Hub when a token and a repo id are configured, else the embedded one."""
    if os.environ.get("HF_TOKEN") and os.environ.get("DAGSTER_DS_EXAMPLE_REPO"):
        return HubResource(token=dg.EnvVar("HF_TOKEN"))
    return HubResource()


# The schedules and the sensor start switched on (the daemon of `make ui` runs them).
nightly_refresh = fingerprint_refresh_schedule(
    "nightly_refresh",
    "0 3 * * *",
    dg.AssetSelection.groups(GROUP),
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
# Every day of the daily files, each refreshed only when its file (or the code) changed.
daily_refresh = fingerprint_refresh_schedule(
    "daily_refresh",
    "0 4 * * *",
    dg.AssetSelection.groups(DAILY_GROUP),
    default_status=dg.DefaultScheduleStatus.RUNNING,
    lookback=len(days.get_partition_keys()),
)
# The automation path: observes the source every 15 minutes in the sensor's own process
# and records an observation only when its content changed; fingerprint_changed() then
# requests the assets downstream of it. Nothing changed: no observation, no run.
observe_python_docs = fingerprint_source_sensor(
    "observe_python_docs",
    dg.AssetSelection.groups(GROUP),
    minimum_interval_seconds=15 * 60,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
# Dagster's sensor that evaluates the assets' automation conditions (fingerprint_changed()),
# switched on: it turns observe_python_docs' observations into runs of what changed.
python_docs_automation = dg.AutomationConditionSensorDefinition(
    "python_docs_automation",
    target=dg.AssetSelection.groups(GROUP),
    default_status=dg.DefaultSensorStatus.RUNNING,
)

defs = dg.Definitions.merge(
    dg.Definitions(
        assets=[*assets, *daily_assets],
        asset_checks=checks,
        schedules=[nightly_refresh, daily_refresh],
        sensors=[observe_python_docs, python_docs_automation],
        # Shared objects: a component scaffolded below with `resources: true` makes equal
        # ones, which merge with these (distinct equal objects would clash).
        resources={
            "io_manager": shared_resource(
                DatasetIOManager(base_dir=os.environ.get("DAGSTER_DS_STORAGE"))
            ),
            "hub": shared_resource(hub_resource()),
        },
    ),
    # Component definitions scaffolded into definitions/defs/ with `dg` (none by default).
    dg.load_from_defs_folder(path_within_project=Path(__file__).parent.parent),
)


def refresh_job() -> dg.JobDefinition:
    """The refresh job, for `dagster.reconstructable` (the multiprocess executor)."""
    return defs.resolve_job_def(REFRESH_JOB)


def daily_refresh_job() -> dg.JobDefinition:
    """The daily refresh's job (one partition a run), for `dagster.reconstructable`."""
    return defs.resolve_job_def(DAILY_REFRESH_JOB)

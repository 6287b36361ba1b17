"""The example's refresh job under Dagster's celery executor (for `dagster.reconstructable`).

The example's own definitions, unchanged, with `dagster_celery.celery_executor` as
their executor. Workers import this module to run each step; the broker and result
backend come from the run config, the storage from the example's environment
variables (``DAGSTER_DS_STORAGE``, ``DAGSTER_DS_CACHE``).
"""

from __future__ import annotations

import dagster as dg
from dagster_celery import celery_executor

from definitions import REFRESH_JOB, defs


def celery_refresh_job() -> dg.JobDefinition:
    """The example's refresh job, each step a celery task."""
    return dg.Definitions.merge(defs, dg.Definitions(executor=celery_executor)).resolve_job_def(
        REFRESH_JOB
    )

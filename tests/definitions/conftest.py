"""The example pipeline, materialized once for the whole folder: twice, on a temporary instance."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from tests.conftest import NO_STEP_OUTPUT, new_dagster_home
from tests.dg import EXAMPLE_SETTINGS

IN_PROCESS = {"execution": {"config": {"in_process": {}}}}


@dataclass(frozen=True)
class Example:
    home: Path
    cache: Path
    instance: dg.DagsterInstance
    first: dg.ExecuteJobResult
    second: dg.ExecuteJobResult


@pytest.fixture(scope="session")
def example(dagster_homes: Path) -> Iterator[Example]:
    """The example refreshed twice: with the multiprocess executor, then in process.

    The first run is `make demo`'s first (its run config): one process per step, forked
    from a server that imported the pipeline once (Python's default, spawn, imports
    Dagster and the pipeline again for each step: seconds per step).

    The instance, the storage (in the instance's folder) and the embedded Hub's data
    live in a temporary DAGSTER_HOME; the dataset cache in a temporary folder. The
    runs see them in the environment (``$DAGSTER_HOME``, ``$DAGSTER_DS_CACHE``); the
    tests do not: the environment is restored once the runs end, so no later test of
    the session's process finds the example's settings in it.
    """
    from definitions import refresh_job
    from definitions.demo import RUN_CONFIG

    home = new_dagster_home(dagster_homes)
    cache = Path(tempfile.mkdtemp(prefix="dagster-ds-example-cache-"))
    with dg.instance_for_test(
        temp_dir=str(home), overrides=NO_STEP_OUTPUT, set_dagster_home=False
    ) as instance:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("DAGSTER_HOME", str(home))
            env.setenv("DAGSTER_DS_CACHE", str(cache))
            env.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            env.setenv("DAGSTER_DS_DISABLE_PROGRESS_BARS", "1")
            for name in EXAMPLE_SETTINGS:
                env.delenv(name, raising=False)
            job = dg.reconstructable(refresh_job)
            first = dg.execute_job(job, instance=instance, run_config=RUN_CONFIG)
            second = dg.execute_job(job, instance=instance, run_config=IN_PROCESS)
        yield Example(home, cache, instance, first, second)
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)

"""`make demo`: materialize the example from nothing, then a scheduled refresh: nothing to do.

Everything lives in ``.demo/`` at the repository root (recreated each time):
the Dagster instance (``.demo/dagster_home``, which ``make ui`` opens), the
stored datasets and the embedded Hub (in the instance's storage folder), and
the dataset cache. Runs use the multiprocess executor (one process per step).
The second refresh is a tick of the nightly schedule: it observes the source,
finds no stale asset and launches no run.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import dagster as dg

ROOT = Path(__file__).resolve().parent.parent / ".demo"
HOME = ROOT / "dagster_home"
# One process per step, forked from a server that imported the pipeline once; the
# console shows Dagster's INFO messages (one line per asset: what ran and why), not DEBUG
# (the instance's python_log_level covers the messages of step processes starting).
RUN_CONFIG = {
    "execution": {
        "config": {
            "multiprocess": {"start_method": {"forkserver": {"preload_modules": ["definitions"]}}}
        }
    },
    "loggers": {"console": {"config": {"log_level": "INFO"}}},
}


# What a materialization's `dagster_ds/cache` entry means, in the demo's words.
OUTCOMES = {"miss": "computed", "hit": "stored"}


def prepare() -> None:
    """A fresh instance and cache under ``.demo/``."""
    shutil.rmtree(ROOT, ignore_errors=True)
    HOME.mkdir(parents=True)
    (HOME / "dagster.yaml").write_text(
        "telemetry:\n  enabled: false\npython_logs:\n  python_log_level: INFO\n"
    )
    os.environ["DAGSTER_HOME"] = str(HOME)
    os.environ["DAGSTER_DS_CACHE"] = str(ROOT / "cache")
    os.environ.setdefault("HF_HUB_DISABLE_XET", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("DAGSTER_DS_DISABLE_PROGRESS_BARS", "1")


def report(title: str, result: dg.ExecuteJobResult, seconds: float) -> None:
    """One line per asset: what happened, its data version, rows, Hub push; then the checks."""
    print(f"\n{title}: {'succeeded' if result.success else 'FAILED'} in {seconds:.1f}s")
    print(f"  {'asset':<12} {'outcome':<9} {'data version (as in the UI)':<34} {'rows':>6}  hub")
    for event in result.get_asset_observation_events():
        observation = event.asset_observation_data.asset_observation
        rows = _value(observation.metadata, "dagster/row_count")
        print(
            f"  {observation.asset_key.to_user_string():<12} {'observed':<9}"
            f" {observation.data_version or '':<34} {rows:>6}"
        )
    for event in result.get_asset_materialization_events():
        materialization = event.materialization
        metadata = materialization.metadata
        print(
            f"  {materialization.asset_key.to_user_string():<12}"
            f" {OUTCOMES.get(_value(metadata, 'dagster_ds/cache'), ''):<9}"
            f" {_value(metadata, 'dagster_ds/data_version'):<34}"
            f" {_value(metadata, 'dagster/row_count'):>6}"
            f"  {_value(metadata, 'dagster_ds/hub_push')}"
        )
    print(
        "  (observed: a source, hashed by content; computed: its transform ran and stored the"
        " result;\n   stored: its recipe was already stored, so nothing ran)"
    )
    for event in result.all_events:
        if event.event_type_value == "ASSET_CHECK_EVALUATION":
            evaluation = event.event_specific_data
            status = "passed" if getattr(evaluation, "passed", False) else "FAILED"
            key = getattr(evaluation, "asset_check_key", None)
            print(f"  check {key.to_user_string() if key else '?'}: {status}")


def _value(metadata: dict[str, dg.MetadataValue], key: str) -> str:
    value = metadata.get(key)
    return "" if value is None else str(value.value)


def main() -> None:
    prepare()
    from definitions import defs, nightly_refresh, refresh_job

    with dg.DagsterInstance.get() as instance:
        started = time.perf_counter()
        result = dg.execute_job(
            dg.reconstructable(refresh_job), instance=instance, run_config=RUN_CONFIG
        )
        report("Run 1, from nothing", result, time.perf_counter() - started)
        if not result.success:
            raise SystemExit(1)
        started = time.perf_counter()
        context = dg.build_schedule_context(
            instance=instance, repository_def=defs.get_repository_def()
        )
        tick = nightly_refresh.evaluate_tick(context)
        seconds = time.perf_counter() - started
        title = "Refresh 2, nothing changed: a tick of the nightly schedule"
        if not tick.run_requests:
            print(f"\n{title}: no run launched, decided in {seconds:.2f}s")
            print("\n".join(f"  {line.strip()}" for line in (tick.skip_message or "").splitlines()))
        for request in tick.run_requests or []:  # something changed after all: run only that
            result = dg.execute_job(
                dg.reconstructable(refresh_job),
                instance=instance,
                run_config=RUN_CONFIG,
                asset_selection=list(request.asset_selection or []),
            )
            report(title, result, time.perf_counter() - started)
            if not result.success:
                raise SystemExit(1)
    print(f"\nThe instance is in {HOME}. Browse it with: make ui")


if __name__ == "__main__":
    main()

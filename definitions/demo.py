"""`make demo`: refresh the example; a second `make demo` finds everything stored.

Everything lives in ``.demo/`` at the repository root (``$DAGSTER_DS_DEMO_DIR``
when set), kept from one ``make demo`` to the next: the Dagster instance
(``.demo/dagster_home``, which ``make ui`` opens), the stored datasets and the
embedded Hub (in the instance's storage folder, with its recorded port, so the
Hub links of earlier runs keep working), and the dataset cache.

On a new instance, ``make demo`` first runs the nightly refresh job with the
multiprocess executor (one process per step), computing and pushing
everything. Then, every time, a tick of the daily schedule requests one run
per daily partition that is missing or changed, and a tick of the nightly
schedule observes the source and requests a run of the stale assets only (a
tick's runs execute in process). When nothing changed, as on a second ``make
demo``, the ticks find every fingerprint stored and launch no run.

``make ui`` and ``make demo`` hold the instance (a shared lock on
``.demo/in-use.lock``) while they run; ``make demo-reset`` (``--reset``) deletes
``.demo/`` to start over, and refuses while it is held.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

ROOT = Path(
    os.environ.get("DAGSTER_DS_DEMO_DIR") or Path(__file__).resolve().parent.parent / ".demo"
).resolve()
HOME = ROOT / "dagster_home"
LOCK = ROOT / "in-use.lock"
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
# A tick's runs refresh little (a day's file, what changed): in process, no step processes.
TICK_RUN_CONFIG = {"execution": {"config": {"in_process": {}}}, "loggers": RUN_CONFIG["loggers"]}


# What a materialization's `dagster_ds/cache` entry means, in the demo's words.
OUTCOMES = {"miss": "computed", "hit": "stored"}


def prepare() -> None:
    """The instance and cache under ``ROOT``: made when missing, else kept as they are."""
    HOME.mkdir(parents=True, exist_ok=True)
    settings = HOME / "dagster.yaml"
    if not settings.exists():
        settings.write_text(
            "telemetry:\n  enabled: false\npython_logs:\n  python_log_level: INFO\n"
        )
    os.environ["DAGSTER_HOME"] = str(HOME)
    os.environ["DAGSTER_DS_CACHE"] = str(ROOT / "cache")
    os.environ.setdefault("HF_HUB_DISABLE_XET", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("DAGSTER_DS_DISABLE_PROGRESS_BARS", "1")


def _lock() -> int:
    ROOT.mkdir(parents=True, exist_ok=True)
    return os.open(LOCK, os.O_RDWR | os.O_CREAT, 0o644)


@contextmanager
def held(exclusive: bool = False) -> Iterator[bool]:
    """Hold ``LOCK``: shared (waits for a reset to finish), or exclusive if free at once.

    Yields whether it is held (an exclusive lock is not while anyone else holds it).
    The lock goes with the process, whatever ends it.
    """
    descriptor = _lock()
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB if exclusive else fcntl.LOCK_SH)
            acquired = True
        except BlockingIOError:
            acquired = False
        yield acquired
    finally:
        os.close(descriptor)


def hold(command: Sequence[str]) -> None:
    """Become ``command``, holding the instance (shared) until it exits: ``make ui``."""
    descriptor = _lock()
    fcntl.flock(descriptor, fcntl.LOCK_SH)
    os.set_inheritable(descriptor, True)  # the lock stays with the command's process
    os.execvp(command[0], list(command))


def reset() -> int:
    """Delete ``ROOT`` unless something holds it; the exit status."""
    if not ROOT.exists():
        print(f"Nothing to reset: {ROOT} does not exist.")
        return 0
    with held(exclusive=True) as free:
        if not free:
            print(
                f"The demo's instance in {ROOT} is in use (make ui or make demo is running on"
                " it): nothing was deleted. Stop it, then run make demo-reset again.",
                file=sys.stderr,
            )
            return 1
        shutil.rmtree(ROOT)
    print(f"Deleted {ROOT}: the next make demo starts from nothing.")
    return 0


def report(title: str, result: dg.ExecuteJobResult, seconds: float) -> None:
    """One line per asset: what happened, its data version, rows, Hub push; then the checks."""
    print(f"\n{title}: {'succeeded' if result.success else 'FAILED'} in {seconds:.1f}s")
    rows: list[tuple[str, str, str, str, str]] = []
    for event in result.get_asset_observation_events():
        observation = event.asset_observation_data.asset_observation
        rows.append(
            (
                observation.asset_key.to_user_string(),
                "observed",
                observation.data_version or "",
                _value(observation.metadata, "dagster/row_count"),
                "",
            )
        )
    for event in result.get_asset_materialization_events():
        materialization = event.materialization
        metadata = materialization.metadata
        rows.append(
            (
                materialization.asset_key.to_user_string(),
                OUTCOMES.get(_value(metadata, "dagster_ds/cache"), "published"),
                _value(metadata, "dagster_ds/data_version"),
                _value(metadata, "dagster/row_count"),
                _value(metadata, "dagster_ds/hub_push"),
            )
        )
    width = max([len("asset"), *(len(row[0]) for row in rows)])
    print(
        f"  {'asset':<{width}} {'outcome':<9} {'data version (as in the UI)':<32} {'rows':>6}  hub"
    )
    for asset, outcome, version, count, hub in rows:
        print(f"  {asset:<{width}} {outcome:<9} {version:<32} {count:>6}  {hub}".rstrip())
    print(
        "  (observed: a source, hashed by content; computed: its transform ran and stored the"
        " result;\n   stored: its recipe was already stored, so nothing ran; published: a Hub"
        " publication of the splits)"
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
    from definitions import daily_refresh, daily_refresh_job, defs, nightly_refresh, refresh_job

    with held(), dg.DagsterInstance.get() as instance:
        earlier = instance.get_runs_count()
        if earlier:
            print(f"The instance in {HOME} is kept, with its {earlier} runs: refreshing it.")
        else:
            started = time.perf_counter()
            result = dg.execute_job(
                dg.reconstructable(refresh_job), instance=instance, run_config=RUN_CONFIG
            )
            report("Run 1, from nothing", result, time.perf_counter() - started)
            if not result.success:
                raise SystemExit(1)
        repository = defs.get_repository_def()
        title = "Daily partitions: a tick of the daily schedule"
        tick(instance, repository, daily_refresh, daily_refresh_job, title)
        title = "Refresh: a tick of the nightly schedule"
        tick(instance, repository, nightly_refresh, refresh_job, title)
    print(f"\nThe instance is in {HOME}. Browse it with: make ui")


def tick(
    instance: dg.DagsterInstance,
    repository: dg.RepositoryDefinition,
    schedule: dg.ScheduleDefinition,
    job: Callable[[], dg.JobDefinition],
    title: str,
) -> None:
    """Evaluate a tick of ``schedule`` and run what it requests (the stale assets, partitions)."""
    started = time.perf_counter()
    context = dg.build_schedule_context(instance=instance, repository_def=repository)
    evaluated = schedule.evaluate_tick(context)
    if not evaluated.run_requests:
        seconds = time.perf_counter() - started
        print(f"\n{title}: no run launched, decided in {seconds:.2f}s")
        lines = (evaluated.skip_message or "").splitlines()
        print("\n".join(f"  {line.strip()}" for line in lines))
    for request in evaluated.run_requests or []:
        partition = request.partition_key
        tags = {**request.tags, **({"dagster/partition": partition} if partition else {})}
        result = dg.execute_job(
            dg.reconstructable(job),
            instance=instance,
            run_config=TICK_RUN_CONFIG,
            tags=tags,
            asset_selection=list(request.asset_selection or []),
        )
        where = f" {partition}" if partition else ""
        report(f"{title}{where}", result, time.perf_counter() - started)
        if not result.success:
            raise SystemExit(1)
        started = time.perf_counter()


def cli(arguments: Sequence[str]) -> int:
    """``python -m definitions.demo [--reset | --hold COMMAND...]``; the exit status."""
    parser = argparse.ArgumentParser(prog="python -m definitions.demo", description=__doc__)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--reset", action="store_true", help="delete the demo's folder")
    action.add_argument(
        "--hold", nargs=argparse.REMAINDER, help="run COMMAND holding the demo's instance"
    )
    options = parser.parse_args(arguments)
    if options.reset:
        return reset()
    if options.hold:
        hold(options.hold)
    main()
    return 0


if __name__ == "__main__":
    raise SystemExit(cli(sys.argv[1:]))

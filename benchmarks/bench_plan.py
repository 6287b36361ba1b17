"""What ``dagster-ds plan`` costs on the example's daily pipeline with 30 daily partitions.

Run with ``python benchmarks/bench_plan.py``. The example's daily corner
(definitions/daily.py: a partitioned source of one JSON Lines file a day, and
``daily_paragraphs``) is extended to 30 days, every partition materialized on a
persistent instance, then planned:

- ``nothing changed``: every partition skipped (the sources fingerprinted from
  their files, each recipe looked up by one manifest read);
- ``one day changed``: one day's file rewritten (that partition runs, 29 skip);
- ``code changed``: the function edited (30 partitions run, each said why, each
  with an estimate from its earlier run);
- ``command, end to end``: ``dagster-ds plan -f location.py`` in a process of its
  own (Python, Dagster and the code location imported, the instance opened),
  next to a process that only imports Dagster.

Target: a plan (the decision, in process) ≤ 1 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DAGSTER_DS_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "yes")

import dagster as dg
from _timing import best_of

from dagster_ds.orchestration import DatasetStore
from dagster_ds.orchestration._plan import Plan, plan_refresh

DAYS = 30
REPEAT = 5
TARGET_SECONDS = 1.0
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
EXAMPLE_DAYS = Path(__file__).resolve().parent.parent / "definitions" / "data" / "daily"

LOCATION = '''
import dagster as dg

from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source
from definitions.text import clean_example, is_prose

days = dg.DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-{end:02d}")
python_docs_daily = dataset_source(
    "python_docs_daily", "json", data_files={files!r}, partitions_def=days
)


@dataset_asset(partitions_def=days)
def daily_paragraphs(python_docs_daily: Dataset) -> Dataset:
    """One day's prose paragraphs, unwrapped to one line."""
    return python_docs_daily.map(clean_example).filter(is_prose).remove_columns(["is_code"]){edit}


defs = dg.Definitions(
    assets=[python_docs_daily, daily_paragraphs],
    resources={{"io_manager": DatasetIOManager(base_dir={store!r})}},
)
'''


def _days(folder: Path) -> list[Path]:
    """30 daily files, each one of the example's days with its ids renamed."""
    examples = sorted(EXAMPLE_DAYS.glob("*.jsonl"))
    folder.mkdir(parents=True)
    files = []
    for day in range(1, DAYS + 1):
        name = f"2024-01-{day:02d}"
        text = examples[day % len(examples)].read_text(encoding="utf-8")
        for example in examples:
            text = text.replace(f'"{example.stem}/', f'"{name}/')
        path = folder / f"{name}.jsonl"
        path.write_text(text, encoding="utf-8")
        files.append(path)
    return files


def _location(folder: Path, data: Path, store: Path, edit: str = "") -> dg.Definitions:
    path = folder / f"location{'_edited' if edit else ''}.py"
    path.write_text(
        LOCATION.format(
            end=DAYS + 1, files=str(data / "{partition_key}.jsonl"), store=str(store), edit=edit
        )
    )
    namespace: dict[str, object] = {"__name__": path.stem}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    defs = namespace["defs"]
    assert isinstance(defs, dg.Definitions)
    return defs


def _plan(defs: dg.Definitions, instance: dg.DagsterInstance, store: Path) -> Plan:
    return plan_refresh(
        defs.get_repository_def(),
        instance,
        dg.AssetSelection.all(),
        store=DatasetStore(str(store)),
        lookback=DAYS,
    )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as folder_name:
        folder = Path(folder_name)
        home = folder / "home"
        home.mkdir()
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        os.environ["DAGSTER_HOME"] = str(home)
        data, store = folder / "daily", folder / "store"
        files = _days(data)
        defs = _location(folder, data, store)
        job = defs.resolve_implicit_global_asset_job_def()
        started = time.perf_counter()
        with dg.DagsterInstance.get() as instance:
            for day in range(1, DAYS + 1):
                result = job.execute_in_process(
                    instance=instance, partition_key=f"2024-01-{day:02d}", run_config=QUIET
                )
                assert result.success
            print(f"materialized {DAYS} partitions in {time.perf_counter() - started:.1f} s")
            rows: list[tuple[str, float, str]] = []
            plan = _plan(defs, instance, store)
            rows.append(
                (
                    "nothing changed",
                    best_of(lambda: _plan(defs, instance, store), REPEAT),
                    plan.summary(),
                )
            )
            files[4].write_text(files[4].read_text(encoding="utf-8").replace("the", "a"))
            plan = _plan(defs, instance, store)
            rows.append(
                (
                    "one day changed",
                    best_of(lambda: _plan(defs, instance, store), REPEAT),
                    plan.summary(),
                )
            )
            edited = _location(folder, data, store, edit='.rename_column("text", "body")')
            plan = _plan(edited, instance, store)
            rows.append(
                (
                    "code changed",
                    best_of(lambda: _plan(edited, instance, store), REPEAT),
                    plan.summary(),
                )
            )
        command = [str(Path(sys.executable).with_name("dagster-ds")), "plan"]
        command += ["-f", str(folder / "location.py"), "--store", str(store)]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=folder)
        seconds = time.perf_counter() - started
        assert done.returncode == 0, done.stderr
        rows.append(("command, end to end", seconds, done.stdout.splitlines()[0]))
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import dagster"], check=True)
        rows.append(("(import dagster alone)", time.perf_counter() - started, "-"))
    print(f"\ndagster-ds plan, {DAYS} daily partitions (target: a plan ≤ {TARGET_SECONDS:.0f} s)")
    for case, seconds, summary in rows:
        print(f"{case:<22} {seconds * 1000:>8.0f} ms   {summary}")


if __name__ == "__main__":
    main()

"""`make demo` (definitions/demo.py) on a temporary folder: it keeps its instance, and refreshes.

The demo runs as `make demo` runs it, in subprocesses (``python -m``, forked from
`tests._fast`'s server: Dagster is imported once), with ``DAGSTER_DS_DEMO_DIR``
pointing it at ``tmp_path`` (never at the repository's ``.demo/``). Its folder
starts as a copy of the materialized example (the session's `example`: the demo's
first run, from nothing; test_example.py checks the demo's report of it), so the
test's first demo finds an instance to keep, as every later `make demo` does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from tests import _fast
from tests.conftest import REPO_ROOT
from tests.definitions.conftest import Example
from tests.dg import EXAMPLE_SETTINGS

DAILY_FILES = REPO_ROOT / "definitions" / "data" / "daily"


def _env(folder: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in EXAMPLE_SETTINGS}
    env.pop("DAGSTER_HOME", None)
    return {**env, "DAGSTER_DS_DEMO_DIR": str(folder)}


def _demo(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m definitions.demo ARGS``, forked from `tests._fast`'s warm server."""
    return _fast.run(
        [sys.executable, "-m", "definitions.demo", *args],
        cwd=REPO_ROOT,
        env=_env(folder),
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )


def _runs(folder: Path) -> list[str]:
    with dg.DagsterInstance.from_config(str(folder / "dagster_home")) as instance:
        return [run.run_id for run in instance.get_runs()]


def _daily_data_versions(folder: Path) -> dict[str, str]:
    """Each day's data version of the daily asset, as Dagster records it."""
    with dg.DagsterInstance.from_config(str(folder / "dagster_home")) as instance:
        records = instance.fetch_materializations(dg.AssetKey("daily_paragraphs"), limit=100)
        return {
            str(record.partition_key): (record.asset_materialization.tags or {})[
                "dagster/data_version"
            ]
            for record in records.records
            if record.asset_materialization is not None
        }


def _daily_partitions(folder: Path) -> set[str]:
    with dg.DagsterInstance.from_config(str(folder / "dagster_home")) as instance:
        return instance.get_materialized_partitions(dg.AssetKey("daily_paragraphs"))


def _demo_folder(example: Example, folder: Path) -> None:
    """The example's instance and dataset cache, laid out as the demo's ``folder``.

    The instance's settings go: the demo writes its own, as on its first run.
    """
    shutil.copytree(example.home, folder / "dagster_home")
    (folder / "dagster_home" / "dagster.yaml").unlink()
    shutil.copytree(example.cache, folder / "cache")


@pytest.mark.slow
def test_a_second_demo_keeps_the_instance_in_use_and_skips_everything(
    example: Example, tmp_path: Path
) -> None:
    folder = tmp_path / "demo"
    _demo_folder(example, folder)
    first = _demo(folder)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Run 1" not in first.stdout
    assert f"The instance in {folder / 'dagster_home'} is kept, with its " in first.stdout
    # Every daily file is a materialized partition.
    assert _daily_partitions(folder) == {path.stem for path in DAILY_FILES.glob("*.jsonl")}
    # The table names each daily run's outcome and the data version the UI shows.
    versions = _daily_data_versions(folder)
    assert versions.keys() == _daily_partitions(folder)
    rows = [row.split()[:3] for row in first.stdout.splitlines()]
    for day, version in versions.items():
        assert f"Daily partitions: a tick of the daily schedule {day}: succeeded" in first.stdout
        assert ["daily_paragraphs", "computed", version] in rows
    runs = _runs(folder)
    port = (folder / "dagster_home" / "storage" / "dagster_ds_hub" / "port.json").read_text()

    # Held as `make ui` holds it (its `dagster dev` becomes the holding process).
    with _fast.Popen(
        [sys.executable, "-m", "definitions.demo", "--hold", sys.executable, "-c", _HELD],
        cwd=REPO_ROOT,
        env=_env(folder),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdin is not None
        assert holder.stdout is not None
        try:
            assert holder.stdout.readline() == "held\n"
            second = _demo(folder)
            refused = _demo(folder, "--reset")
        finally:
            holder.stdin.close()  # the held command exits
    assert second.returncode == 0, second.stdout + second.stderr
    assert "Run 1" not in second.stdout
    assert second.stdout.count("no run launched") == 2  # the daily and the nightly ticks
    assert "0 stale assets of 5: nothing to do" in second.stdout
    assert "0 stale assets of 3: nothing to do" in second.stdout
    assert _runs(folder) == runs  # every earlier run kept, no new one
    assert (
        folder / "dagster_home" / "storage" / "dagster_ds_hub" / "port.json"
    ).read_text() == port

    assert refused.returncode == 1
    assert "in use" in refused.stderr
    assert "nothing was deleted" in refused.stderr
    assert _runs(folder) == runs

    # Once nothing holds it, a reset starts over.
    reset = _demo(folder, "--reset")
    assert reset.returncode == 0, reset.stdout + reset.stderr
    assert not folder.exists()


_HELD = "import sys; print('held', flush=True); sys.stdin.read()"

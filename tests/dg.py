"""The `dg` command line, run in a project folder as a user would, on a test's DAGSTER_HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests import _fast

# The example's settings of the environment: unset, so `dg` sees the defaults.
EXAMPLE_SETTINGS = ("HF_TOKEN", "HF_ENDPOINT", "DAGSTER_DS_EXAMPLE_REPO", "DAGSTER_DS_STORAGE")


def run_dg(project: Path, home: Path, *args: str, path: Path) -> subprocess.CompletedProcess[str]:
    """``dg ARGS`` in ``project``, importing the project's code from ``path`` first.

    dagster_ds comes from wherever this process imports it (``PYTHONPATH`` after
    ``path``); the instance is ``home`` (made if missing). The installed ``dg`` script
    runs in a child forked from `tests._fast`'s server (Dagster already imported).
    """
    home.mkdir(parents=True, exist_ok=True)
    env = {key: value for key, value in os.environ.items() if key not in EXAMPLE_SETTINGS}
    env.update(
        PYTHONPATH=os.pathsep.join([str(path), *filter(None, [env.get("PYTHONPATH")])]),
        VIRTUAL_ENV=str(Path(sys.executable).parent.parent),
        DAGSTER_HOME=str(home),
        NO_COLOR="1",
        COLUMNS="200",
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
    )
    return _fast.run(
        [sys.executable, str(Path(sys.executable).with_name("dg")), *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )

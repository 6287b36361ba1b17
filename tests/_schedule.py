"""How `pytest -n 2 --dist loadfile` (`make test`) shares the suite out: longest files first.

pytest-xdist's ``loadfile`` sends a whole test file to one worker, so a file's module
fixtures are built once; it hands files out by how many tests they hold. Here a
worker that asks for work gets the file that took longest last time
(``tests/durations.json``): the long files overlap instead of leaving one worker
alone with them at the end. A file not in the record counts
`SECONDS_PER_UNKNOWN_TEST` per test; a stale record only changes the order.

The folders in `ONE_UNIT` go to one worker as one unit: their files share a
session fixture that is then built once (``tests/definitions``: the materialized
example; ``tests/distributed``: the Dask cluster and its S3 server), and they run
in collection order there.

``pytest --record-durations`` (``make durations``) writes what each unit took to
``tests/durations.json`` (the units that ran; the others keep their record).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
ONE_UNIT = ("tests/definitions/", "tests/distributed/")
SECONDS_PER_UNKNOWN_TEST = 0.2


def unit_of(nodeid: str) -> str:
    """The work unit of a test: its file, or its folder when that is in `ONE_UNIT`."""
    path = nodeid.split("::", 1)[0]
    for folder in ONE_UNIT:
        if path.startswith(folder):
            return folder.rstrip("/")
    return path


def recorded_durations() -> dict[str, float]:
    """The seconds each unit took when recorded, or nothing when there is no record."""
    try:
        return json.loads(DURATIONS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-durations",
        action="store_true",
        help=f"write the seconds each test file took to {DURATIONS.name} (the order of -n runs)",
    )


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    durations = recorded_durations()

    class LongestFirst(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            def expected(unit: str) -> float:
                tests = len(self.workqueue[unit])
                return durations.get(unit, tests * SECONDS_PER_UNKNOWN_TEST)

            self.workqueue.move_to_end(max(self.workqueue, key=expected), last=False)
            super()._assign_work_unit(node)

    return LongestFirst(config, log)


class _Recorder:
    """Sums each unit's setup, call and teardown seconds, in the process that reports."""

    def __init__(self) -> None:
        self.seconds: defaultdict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[unit_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if session.testsfailed or not self.seconds:
            return
        measured = {unit: round(seconds, 1) for unit, seconds in self.seconds.items()}
        recorded = dict(sorted({**recorded_durations(), **measured}.items()))
        DURATIONS.write_text(json.dumps(recorded, indent=1) + "\n", encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    is_worker = hasattr(config, "workerinput")
    if config.getoption("record_durations") and not is_worker:
        config.pluginmanager.register(_Recorder(), "dagster-ds-durations")

"""Forked worker processes: results in order, clear errors, no hang when a worker dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from dagster_ds.errors import WorkerDiedError
from dagster_ds.parallel import in_processes
from tests import _fast


def _children() -> set[int]:
    return {child.pid for child in psutil.Process().children(recursive=True)}


def _square_slowly(n: int) -> int:
    time.sleep(0.001 * (n % 3))
    return n * n


def test_results_come_in_the_items_order_whatever_order_workers_finish() -> None:
    assert list(in_processes(_square_slowly, range(40), 3, what=str)) == [n * n for n in range(40)]


def test_the_function_runs_in_other_processes_and_is_never_pickled() -> None:
    lock = threading.Lock()  # unpicklable: it must be inherited, not sent

    def pid_under_lock(_: int) -> int:
        with lock:
            return os.getpid()

    pids = set(in_processes(pid_under_lock, range(8), 2, what=str))
    assert os.getpid() not in pids
    assert 1 <= len(pids) <= 2


def test_a_workers_exception_reaches_the_caller_with_the_workers_traceback() -> None:
    def fail_at_five(n: int) -> int:
        if n == 5:
            raise ValueError(f"row {n} is bad")
        return n

    before = _children()
    with pytest.raises(ValueError, match="row 5 is bad") as raised:
        list(in_processes(fail_at_five, range(10), 2, what=str))
    assert any("fail_at_five" in note for note in raised.value.__notes__)
    assert _children() == before  # every worker was reaped


def test_an_unpicklable_result_is_a_clear_error_not_a_hang() -> None:
    with pytest.raises(TypeError, match=r"could not send its result back .*pickle"):
        list(in_processes(lambda n: threading.Lock(), range(3), 2, what=str))


def _refuse_to_rebuild() -> Exception:
    raise RuntimeError("this exception cannot be rebuilt")


class _Unrebuildable(Exception):
    """Pickles, but unpickling it fails (whatever reducers other libraries installed)."""

    def __reduce__(self) -> tuple[object, tuple[()]]:
        return (_refuse_to_rebuild, ())


def test_an_exception_that_cannot_be_rebuilt_in_the_caller_is_named() -> None:
    def raise_it(n: int) -> int:
        raise _Unrebuildable(f"{n}: no")

    with pytest.raises(TypeError, match=r"could not send its exception \(_Unrebuildable: 0: no\)"):
        list(in_processes(raise_it, range(1), 1, what=str))


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_a_killed_worker_with_much_work_queued_fails_clearly_and_never_hangs(workers: int) -> None:
    def die_at_seven(n: int) -> int:
        if n == 7:
            os.kill(os.getpid(), signal.SIGKILL)
        return n

    before = _children()
    for _ in range(5):
        with pytest.raises(WorkerDiedError, match="died while computing item 7 "):
            list(in_processes(die_at_seven, range(200), workers, what=lambda n: f"item {n}"))
    assert _children() == before


def test_work_already_handed_out_finishes_when_another_worker_fails(tmp_path: Path) -> None:
    def slow_or_failing(n: int) -> int:
        if n == 0:
            time.sleep(0.05)
            raise ValueError("first item failed")
        time.sleep(0.5)
        (tmp_path / f"done-{n}").touch()
        return n

    with pytest.raises(ValueError, match="first item failed"):
        list(in_processes(slow_or_failing, range(10), 2, what=str))
    assert [path.name for path in tmp_path.iterdir()] == ["done-1"]  # item 1, and nothing after


def test_closing_the_results_early_stops_the_workers() -> None:
    before = _children()
    results = in_processes(_square_slowly, range(1_000), 2, what=str)
    assert next(results) == 0
    results.close()
    assert _children() == before


def test_workers_exit_when_the_caller_is_killed(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import time
        from dagster_ds.parallel import in_processes

        def wait(n):
            time.sleep(0.2)
            return n

        for _ in in_processes(wait, range(10_000), 2, what=str):
            print("computed", flush=True)
        """
    )
    caller = _fast.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    assert caller.stdout is not None
    caller.stdout.readline()
    workers = psutil.Process(caller.pid).children()
    assert len(workers) == 2
    caller.kill()
    caller.wait()
    caller.stdout.close()
    _, alive = psutil.wait_procs(workers, timeout=30)
    assert alive == []

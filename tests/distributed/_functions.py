"""Functions the distributed tests map: importable by the cluster's workers.

Each batch call appends the batch's first id to ``log``, so a test counts the
shards computed across every process (one batch per shard).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any


def _lines(log: str | Path) -> list[list[str]]:
    path = Path(log)
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def logged(log: str | Path) -> list[int]:
    """The first id of each batch computed, in every process."""
    return [int(line[0]) for line in _lines(log)]


def logged_in(log: str | Path, processes: set[int]) -> list[int]:
    """The first id of each batch computed in one of ``processes``."""
    return [int(line[0]) for line in _lines(log) if int(line[1]) in processes]


def pids(log: str | Path) -> set[int]:
    """The processes that computed them."""
    return {int(line[1]) for line in _lines(log)}


def _log(log: str, batch: dict[str, list[Any]]) -> None:
    if batch["id"]:
        with open(log, "a") as file:
            file.write(f"{batch['id'][0]} {os.getpid()}\n")


def double(batch: dict[str, list[Any]], log: str) -> dict[str, list[Any]]:
    _log(log, batch)
    return {"double": [value * 2 for value in batch["id"]]}


def keep_even(batch: dict[str, list[Any]], log: str) -> list[bool]:
    _log(log, batch)
    return [value % 2 == 0 for value in batch["id"]]


def keep_or_raise(batch: dict[str, list[Any]], log: str, bad: int) -> list[bool]:
    if bad in batch["id"]:
        raise ValueError(f"cannot judge id {bad}")
    return keep_even(batch, log)


def slow_double(batch: dict[str, list[Any]], log: str, seconds: float) -> dict[str, list[Any]]:
    time.sleep(seconds)
    return double(batch, log)


def double_or_die(
    batch: dict[str, list[Any]], log: str, die_on: int, flag: str, wait_for: int
) -> dict[str, list[Any]]:
    """``double``, except that the first batch holding ``die_on`` kills its worker process
    once the other shards are done (``wait_for`` lines in the log)."""
    if die_on in batch["id"] and not os.path.exists(flag):
        deadline = time.monotonic() + 30
        while len(logged(log)) < wait_for and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # their entries are being published
        Path(flag).touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return double(batch, log)


def double_or_raise(batch: dict[str, list[Any]], log: str, bad: int) -> dict[str, list[Any]]:
    if bad in batch["id"]:
        raise ValueError(f"cannot double id {bad}")
    return double(batch, log)


def double_failing_once(batch: dict[str, list[Any]], log: str, flag: str) -> dict[str, list[Any]]:
    """``double``, except that the first call of all (``flag`` not yet there) raises."""
    if not os.path.exists(flag):
        Path(flag).touch()
        raise OSError("a transient failure")
    return double(batch, log)


def double_or_raise_unbatched(row: dict[str, Any], bad: int) -> dict[str, Any]:
    if row["id"] == bad:
        raise ValueError(f"cannot double id {bad}")
    return {"double": row["id"] * 2}


def add_path(folder: str) -> None:
    """Put ``folder`` first on this process's sys.path (run on workers by ``client.run``)."""
    import sys

    sys.path.insert(0, folder)


def forget_path(folder: str) -> None:
    import sys

    if folder in sys.path:
        sys.path.remove(folder)

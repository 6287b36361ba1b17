"""Who is this process, and is another process still alive?

Locks, leases and in-flight writes record their owner as (host, pid, start):
``start`` is the process start time read from ``/proc`` on Linux, so a pid
reused by a new process is not mistaken for the old owner. Liveness can only be
checked on the same host; other hosts' records expire by age instead.
"""

from __future__ import annotations

import functools
import os
import socket
from dataclasses import dataclass

from dagster_ds.cache._json import as_object


@dataclass(frozen=True)
class Owner:
    host: str
    pid: int
    start: str | None

    def to_json(self) -> dict[str, object]:
        return {"host": self.host, "pid": self.pid, "start": self.start}

    @classmethod
    def from_json(cls, value: object) -> Owner | None:
        record = as_object(value)
        if record is None:
            return None
        host, pid, start = record.get("host"), record.get("pid"), record.get("start")
        if not isinstance(host, str) or not isinstance(pid, int) or isinstance(pid, bool):
            return None
        return cls(host, pid, start if isinstance(start, str) else None)

    @property
    def is_local(self) -> bool:
        """Whether this owner runs on this host, so its liveness can be checked."""
        return self.host == hostname()

    def is_dead(self) -> bool:
        """True only when the owner is known to be gone (same host, process not running)."""
        if not self.is_local:
            return False
        if not pid_exists(self.pid):
            return True
        return self.start is not None and process_start(self.pid) not in (None, self.start)


@functools.cache
def hostname() -> str:
    return socket.gethostname() or "localhost"


def current_owner() -> Owner:
    """This process as an owner (computed again in a forked child, a different owner)."""
    global _current
    pid = os.getpid()
    if _current is None or _current.pid != pid:
        _current = Owner(hostname(), pid, process_start(pid))
    return _current


_current: Owner | None = None


def pid_exists(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by another user
    return _not_zombie(pid)


def process_start(pid: int) -> str | None:
    """The process start time in clock ticks since boot (Linux), or None elsewhere."""
    fields = _stat_fields(pid)
    # Field 22 of /proc/<pid>/stat; fields[0] is field 3 (after "pid (comm)").
    return fields[19] if fields is not None and len(fields) > 19 else None


def _not_zombie(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is None or fields[0] not in ("Z", "X")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read().decode("ascii", "replace")
    except OSError:
        return None
    # The command name may contain spaces and parentheses: split after the last ')'.
    return text[text.rfind(")") + 2 :].split()

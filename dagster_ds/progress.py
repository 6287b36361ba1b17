"""Progress bars for long work: shown on a terminal, quiet elsewhere or when disabled.

Example:
    >>> from dagster_ds import progress
    >>> progress.disable_progress_bars()
    >>> progress.are_progress_bars_disabled()
    True
    >>> progress.enable_progress_bars()
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

__all__ = [
    "are_progress_bars_disabled",
    "disable_progress_bars",
    "enable_progress_bars",
    "progress_bar",
]


class _ProgressSwitch:
    """Whether progress bars may be shown; ``DAGSTER_DS_DISABLE_PROGRESS_BARS=1`` disables them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._enabled = os.environ.get("DAGSTER_DS_DISABLE_PROGRESS_BARS", "").lower() not in (
            "1",
            "true",
            "yes",
        )

    @property
    def enabled(self) -> bool:
        return self._enabled

    def set(self, enabled: bool) -> None:
        with self._lock:
            self._enabled = enabled


_SWITCH = _ProgressSwitch()


def disable_progress_bars() -> None:
    """Never show progress bars in this process."""
    _SWITCH.set(False)


def enable_progress_bars() -> None:
    """Show progress bars again (on a terminal)."""
    _SWITCH.set(True)


def are_progress_bars_disabled() -> bool:
    """Whether progress bars are disabled."""
    return not _SWITCH.enabled


class _NoProgress:
    def update(self, n: int = 1) -> None:
        del n

    def close(self) -> None:
        return None

    def __enter__(self) -> _NoProgress:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None


def progress_bar(total: int | None, desc: str, unit: str = " examples") -> Any:
    """A tqdm bar on a terminal when bars are enabled, otherwise an object that does nothing."""
    if not _SWITCH.enabled or not sys.stderr.isatty():
        return _NoProgress()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, leave=False)

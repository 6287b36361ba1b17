"""The caching switch: the one piece of process-wide cache state.

While caching is enabled (the default) a `CacheStore` created without a root
uses ``$DAGSTER_DS_CACHE`` (or ``~/.cache/dagster_ds``). While it is disabled,
such a store uses a temporary folder private to this process, created on first
use and removed at interpreter exit, and publishes entries under random names:
nothing is ever reused, and nothing outlives the process unless it is saved
(``save_to_disk()``). Stores given an explicit root are not affected (pass
``random_names=True`` to get the same behaviour there, e.g. in a worker process
handed its parent's ``store.root``). A forked child shares its parent's folder;
only the parent removes it.

`disable_caching` / `enable_caching` set the switch; `caching_disabled()` turns
caching off for a block. All of them are thread-safe; caching is enabled only
when it is switched on *and* no `caching_disabled()` block is active in any
thread.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar


class _CachingSwitch:
    """Whether caching is on, and the temporary folder used while it is off."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._switched_on = True
        self._disabled_blocks = 0
        self._temporary: str | None = None
        self._temporary_pid = 0

    def enabled(self) -> bool:
        with self._lock:
            return self._switched_on and self._disabled_blocks == 0

    def switch(self, on: bool) -> None:
        with self._lock:
            self._switched_on = on

    @contextmanager
    def disabled(self) -> Generator[None]:
        with self._lock:
            self._disabled_blocks += 1
        try:
            yield
        finally:
            with self._lock:
                self._disabled_blocks -= 1

    def temporary_root(self) -> str | None:
        """The per-process folder to use now, or None while caching is enabled."""
        with self._lock:
            if self._switched_on and self._disabled_blocks == 0:
                return None
            # A forked child (a worker) shares its parent's folder, which only the
            # parent removes, so that the parent can read what the child wrote.
            if self._temporary is None:
                self._temporary = tempfile.mkdtemp(prefix="dagster_ds-nocache-")
                self._temporary_pid = os.getpid()
                atexit.register(_remove_folder, self._temporary, self._temporary_pid)
            return self._temporary


def _remove_folder(path: str, pid: int) -> None:
    if os.getpid() == pid:
        shutil.rmtree(path, ignore_errors=True)


_SWITCH = _CachingSwitch()


def disable_caching() -> None:
    """Turn caching off for this process.

    Transforms then write their results to a per-process temporary folder,
    removed at exit, under random names, and never reuse earlier results.

    Example:
        >>> disable_caching()
        >>> is_caching_enabled()
        False
        >>> enable_caching()
    """
    _SWITCH.switch(False)


def enable_caching() -> None:
    """Turn caching back on (the default); ``caching_disabled()`` blocks still apply.

    Example:
        >>> enable_caching()
        >>> is_caching_enabled()
        True
    """
    _SWITCH.switch(True)


def is_caching_enabled() -> bool:
    """Whether results are cached and reused.

    Example:
        >>> is_caching_enabled()
        True
    """
    return _SWITCH.enabled()


@contextmanager
def caching_disabled() -> Generator[None]:
    """Turn caching off inside a ``with`` block (nestable, thread-safe).

    Example:
        >>> with caching_disabled():
        ...     is_caching_enabled()
        False
        >>> is_caching_enabled()
        True
    """
    with _SWITCH.disabled():
        yield


def temporary_root() -> str | None:
    return _SWITCH.temporary_root()


# The store a `CacheStore()` without a root uses inside a `cache_root()` block.
_ROOT: ContextVar[tuple[str, Mapping[str, object] | None] | None] = ContextVar(
    "dagster_ds_cache_root", default=None
)
# And the stores it reads beneath that one (``read_from=``), with their options.
_READ_FROM: ContextVar[tuple[tuple[str, ...], Mapping[str, object] | None]] = ContextVar(
    "dagster_ds_cache_read_from", default=((), None)
)


@contextmanager
def cache_root(
    root: str,
    storage_options: Mapping[str, object] | None = None,
    *,
    read_from: Sequence[str] = (),
    read_from_options: Mapping[str, object] | None = None,
) -> Generator[None]:
    """Make ``root`` the cache of every ``CacheStore()`` created in a ``with`` block.

    What a dataset asset does while its function runs: the transforms inside
    write into the asset store itself, so storing the asset copies nothing.
    The block holds for this thread (a context variable) and for processes it
    forks; caching off (`caching_disabled`) still wins. ``read_from``: the stores
    read beneath ``root`` and never written (see `CacheStore`).

    Example:
        >>> import tempfile
        >>> with cache_root(tempfile.mkdtemp()):
        ...     CacheStore().root != default_cache_root()
        True
    """
    token = _ROOT.set((root, storage_options))
    layers = _READ_FROM.set((tuple(read_from), read_from_options))
    try:
        yield
    finally:
        _READ_FROM.reset(layers)
        _ROOT.reset(token)


def current_root() -> tuple[str, Mapping[str, object] | None] | None:
    """The root (and storage options) of the innermost `cache_root` block, if any."""
    return _ROOT.get()


def current_read_from() -> tuple[tuple[str, ...], Mapping[str, object] | None]:
    """The ``read_from`` stores (and their options) of the innermost `cache_root` block."""
    return _READ_FROM.get()

"""Temporary folders of the benchmarks, removed when the process that made them exits."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path


def scratch_folder(prefix: str, shared_by: str | None = None) -> Path:
    """A new temporary folder, removed when this process exits (not when a fork does).

    ``shared_by``: an environment variable that names the folder to child processes;
    a process that finds it set uses that folder, and leaves its removal to its maker.

    Example:
        >>> work = scratch_folder("bench-example-")
        >>> work.is_dir()
        True
    """
    if shared_by is not None and shared_by in os.environ:
        return Path(os.environ[shared_by])
    folder = tempfile.mkdtemp(prefix=prefix)
    maker = os.getpid()

    @atexit.register
    def _remove() -> None:
        if os.getpid() == maker:
            shutil.rmtree(folder, ignore_errors=True)

    if shared_by is not None:
        os.environ[shared_by] = folder
    return Path(folder)

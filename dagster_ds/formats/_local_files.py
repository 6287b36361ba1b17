"""Local globs and folders listed with ``os.scandir``: one stat per file found, kept.

fsspec's ``LocalFileSystem.glob`` and ``find`` stat every entry they list (an
lstat, and a stat for links), and a fingerprint then stats each file again.
These functions find the same files, in the same order, with the same rules
(fsspec's ``glob_translate``, its search root and depth, and its entry types:
``glob`` keeps regular files only, ``find`` whatever is not a folder, and
neither follows a link to a folder), but stat only the files they return, once,
and return that stat with each file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator

from fsspec.utils import glob_translate

#: A file found: its path and its ``os.stat`` (None for a link to nothing).
Found = tuple[str, os.stat_result | None]


def local_glob(pattern: str) -> list[Found]:
    """The regular files (no links) matching ``pattern``, as ``LocalFileSystem.glob`` does.

    Args:
        pattern: An absolute POSIX path with ``*``, ``?``, ``[...]`` or ``**`` parts,
            as fsspec's ``url_to_fs`` gives it.

    Returns:
        ``(path, stat)`` of each match, sorted by path.

    Raises:
        ValueError: ``**`` is part of a name (fsspec's rule: ``a/**/b``, not ``a**b``).

    Example:
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> for name in ["b.jsonl", "a.jsonl", "notes.txt"]:
        ...     open(os.path.join(folder, name), "w").close()
        >>> [os.path.basename(path) for path, _ in local_glob(folder + "/*.jsonl")]
        ['a.jsonl', 'b.jsonl']
    """
    matches = re.compile(glob_translate(pattern)).match
    root, depth = _search_root(pattern)
    entries = _walk(root, depth)
    return _found(e for e in entries if e.is_file(follow_symlinks=False) and matches(e.path))


def local_find(folder: str) -> list[Found]:
    """Everything but folders under ``folder``, recursively, as ``LocalFileSystem.find`` does.

    Example:
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> os.makedirs(folder + "/sub")
        >>> open(folder + "/sub/part-0.csv", "w").close()
        >>> [os.path.relpath(path, folder) for path, _ in local_find(folder)]
        ['sub/part-0.csv']
    """
    return _found(entry for entry in _walk(folder, None) if not entry.is_dir(follow_symlinks=False))


def _search_root(pattern: str) -> tuple[str, int | None]:
    """The folder fsspec's glob lists for ``pattern``, and how many levels below it."""
    first = min((index for index in map(pattern.find, "*?[") if index >= 0), default=len(pattern))
    cut = pattern.rfind("/", 0, first)
    depth = None if "**" in pattern else pattern[cut + 1 :].count("/") + 1
    return pattern[: cut + 1], depth


def _walk(folder: str, depth: int | None) -> Iterator[os.DirEntry[str]]:
    """The entries of ``folder`` and of its subfolders down to ``depth`` levels (None: all).

    A folder that cannot be listed (gone, not a folder, no permission) is skipped,
    as fsspec's ``walk`` does. Links to folders are entries, never descended.
    """
    try:
        with os.scandir(folder.rstrip("/") or "/") as listing:
            entries = list(listing)
    except OSError:
        return
    for entry in entries:
        yield entry
        if (depth is None or depth > 1) and entry.is_dir(follow_symlinks=False):
            yield from _walk(entry.path, None if depth is None else depth - 1)


def _found(entries: Iterable[os.DirEntry[str]]) -> list[Found]:
    """``(path, stat)`` of each entry, sorted by path, as fsspec's ``info`` sees them.

    An entry removed since it was listed is left out; a link to nothing is kept,
    without a stat (reading it says what is wrong).
    """
    found: list[Found] = []
    for entry in entries:
        try:
            found.append((entry.path, entry.stat()))  # one lstat; a link's target: one more
        except FileNotFoundError:
            if entry.is_symlink():
                found.append((entry.path, None))
    return sorted(found, key=lambda item: item[0])

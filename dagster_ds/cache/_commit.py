"""Publishing a staged folder in one step: the one atomic-publish mechanism.

Cache entries (and with them asset versions) and `save_to_disk` folders are
written into a staging folder first, then published here with a *commit file*
(``manifest.json``, ``state.json``...) written last:

- locally, the commit file is fsynced into the staged folder and the folder is
  renamed into place: one atomic rename. A folder being replaced is swapped
  with the staged one atomically (Linux ``renameat2``), so readers see the old
  or the new; where the OS cannot swap, it is renamed aside first;
- object stores cannot rename folders: the data files are moved in first, and
  the commit file is written last, atomically. A folder being replaced loses its
  commit file first, so a reader sees no folder for a moment, never a mix.
  A caller that names the staged files (``files``) spares a listing; one that
  wrote them in place (``staged == target``, under the target's lock) publishes
  with the commit file alone, written only if absent (one conditional ``PUT``
  on S3).

A reader that finds the commit file therefore finds every file that goes with it.
"""

from __future__ import annotations

import contextlib
import posixpath
import secrets
from collections.abc import Collection

from dagster_ds.cache._storage import Storage


def publish_folder(
    storage: Storage,
    staged: str,
    target: str,
    commit: str,
    data: bytes,
    *,
    replace: bool,
    files: Collection[str] | None = None,
) -> bool:
    """Publish the files in ``staged`` at ``target``, with ``commit`` (holding ``data``) last.

    Returns False, publishing nothing, when ``target`` is already published and
    ``replace`` is False (the caller decides what to do with its staged folder).
    The parent of ``target`` is created when missing. ``files``: the names of the
    staged files, when the caller knows them (nothing else is listed then).
    """
    if storage.is_local:
        return _by_rename(storage, staged, target, commit, data, replace=replace)
    return _by_commit_file(storage, staged, target, commit, data, replace=replace, files=files)


def _by_rename(
    storage: Storage, staged: str, target: str, commit: str, data: bytes, *, replace: bool
) -> bool:
    storage.write_bytes(storage.child(staged, commit), data)
    storage.sync_dir(staged)
    parent = posixpath.dirname(target.rstrip("/"))
    storage.makedirs(parent)
    for _ in range(3):  # a concurrent writer may publish between our two renames
        if storage.rename_dir(staged, target):
            storage.sync_dir(parent)
            return True
        if not replace:
            return False
        with contextlib.suppress(FileNotFoundError):  # the target vanished meanwhile: retry
            if storage.exchange_dirs(staged, target):  # readers see the old or the new
                storage.sync_dir(parent)
                storage.remove_tree(staged)  # now the old folder; memory maps keep their pages
                return True
            # No atomic exchange here: move the old folder aside first, a moment without one.
            retired = f"{target}.replaced-{secrets.token_hex(4)}"
            if storage.rename_dir(target, retired):
                storage.remove_tree(retired)
    return False


def _by_commit_file(
    storage: Storage,
    staged: str,
    target: str,
    commit: str,
    data: bytes,
    *,
    replace: bool,
    files: Collection[str] | None,
) -> bool:
    commit_path = storage.child(target, commit)
    if staged == target:  # written in place: the commit file alone publishes it
        if replace:
            storage.replace_bytes(commit_path, data)
            return True
        return storage.put_if(commit_path, data, None) is not None
    if not replace and _is_file(storage, commit_path):
        return False
    # Replacing: a crashed writer's leftovers and the old files not in the new set go.
    old = storage.files_under(target) if replace or files is None else []
    if old:
        storage.remove_file(commit_path)
    new = storage.files_under(staged) if files is None else sorted(files)
    storage.makedirs(target)
    for name in new:
        storage.move_file(storage.child(staged, name), storage.child(target, name))
    if replace or not storage.object_store:  # (a file written in place may be seen torn)
        storage.replace_bytes(commit_path, data)
    elif storage.put_if(commit_path, data, None) is None:
        return False  # published meanwhile (by a writer that broke our lock): theirs stands
    for name in set(old) - set(new) - {commit}:
        storage.remove_file(storage.child(target, name))
    if files is None or not storage.object_store:
        storage.remove_tree(staged)  # (on an object store, moving left no folder behind)
    return True


def _is_file(storage: Storage, path: str) -> bool:
    """Whether ``path`` exists, by reading it (one GET, where a HEAD of a missing key lists)."""
    try:
        storage.read_bytes(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return True

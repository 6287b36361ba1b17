"""Views of a commit's tree: folder listings, path lookups and each path's last commit."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dagster_ds.hub.server._errors import HubEntryNotFoundError
from dagster_ds.hub.server._objects import Commit, RepoId
from dagster_ds.hub.server._store import HubStore


def folder_json(commit: Commit, folder: str) -> dict[str, Any]:
    return {"type": "directory", "oid": commit.folder_oids[folder], "size": 0, "path": folder}


def list_folder(commit: Commit, folder: str, *, recursive: bool) -> list[dict[str, Any]]:
    """The entries under ``folder`` ("" for the root): folders first, then files, sorted.

    Raises `HubEntryNotFoundError` when ``folder`` is not a folder of the commit.
    """
    folders = commit.folders
    if folder and folder not in folders:
        raise HubEntryNotFoundError(
            f"{folder!r} is not a folder at commit {commit.id!r}"
            f"{' (it is a file)' if folder in commit.files else ''}: list its parent folder"
            " or use get_paths_info."
        )
    prefix = f"{folder}/" if folder else ""
    depth = prefix.count("/")

    def wanted(path: str) -> bool:
        return path.startswith(prefix) and (recursive or path.count("/") == depth)

    out = [folder_json(commit, f) for f in sorted(folders) if wanted(f)]
    out += [commit.files[p].api_json(p) for p in sorted(commit.files) if wanted(p)]
    return out


def paths_info(commit: Commit, paths: Iterable[str]) -> list[dict[str, Any]]:
    """Entries for the paths that exist in the commit; missing paths are left out."""
    folders = commit.folders
    out: list[dict[str, Any]] = []
    for raw in paths:
        path = raw.strip("/")
        if path in commit.files:
            out.append(commit.files[path].api_json(path))
        elif path in folders:
            out.append(folder_json(commit, path))
    return out


def add_last_commits(
    store: HubStore, repo: RepoId, head: Commit, entries: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Add ``lastCommit`` (the newest first-parent commit that changed it) to each entry.

    Walks the history once, looking only at each commit's changed paths and their
    folders, so the cost is the number of changes walked, not history x files.
    """
    remaining = {e["path"]: e for e in entries}
    for commit in store.history(repo, head):
        for path in store.touched_paths(repo, commit):
            entry = remaining.pop(path, None)
            if entry is not None:
                entry["lastCommit"] = {"id": commit.id, "title": commit.title, "date": commit.date}
        if not remaining:
            break
    return entries

"""On-disk storage of the local Hub: repositories, refs, commits and content-addressed blobs.

Layout of the data folder::

    hub.json                              format marker (refuses foreign folders)
    blobs/<sha256[:2]>/<sha256>           file contents, regular and LFS, deduplicated
    uploads/<upload id>/                  LFS uploads in flight (parts of a multipart upload)
    tmp/                                  files being written, renamed into place when complete
    locks/<type>s/<namespace>/<name>.lock one writer at a time per repository
    repos/<type>s/<namespace>/<name>/
        repo.json                         id, visibility, creation date
        refs.json                         {"refs/heads/main": <commit id>, "refs/pr/1": ...}
        commits/<commit id>.json          the commit: its changes (every 100th: its whole tree)
        objects/<sha256>                  empty marker: this repo may reference that blob

A repository may reference only blobs it has markers for (it received their
content), so content stored for one repository is never reachable from another;
a blob no repository marks is deleted (when its last repository is deleted, and
by the sweep). Markers and blobs change under one store-wide lock.

Every file is written in ``tmp/``, flushed and renamed into place, so a reader
never sees a partial file. A commit becomes visible only when ``refs.json`` is
replaced (one atomic rename) after the commit file and all its blobs exist:
readers of a branch see the old tree or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from filelock import FileLock

from dagster_ds.hub.server._errors import (
    HubBadRequestError,
    HubConflictError,
    HubDataDirError,
    HubRepositoryNotFoundError,
    HubRevisionNotFoundError,
)
from dagster_ds.hub.server._objects import (
    COMMIT_ID,
    DEFAULT_REF,
    Commit,
    FileEntry,
    RepoId,
    now_iso,
)

# Format 2 stores commits as changes and gives each repo blob markers; a format-1 folder
# (whole-tree commits) is upgraded in place when opened, and older servers refuse format 2.
_FORMAT = "dagster_ds.hub.server/2"
_UPGRADABLE = ("dagster_ds.testing.hub/1",)
_COMMIT_CACHE_SIZE = 256


class HubStore:
    """The local Hub's data folder. Safe to share between threads of one server."""

    def __init__(self, root: Path, *, stale_after: float = 300.0) -> None:
        self.root = Path(root).resolve()
        self.stale_after = stale_after
        self._upgrade = False
        self._check_or_initialise()
        self.tmp_dir = self.root / "tmp"
        self.uploads_dir = self.root / "uploads"
        for folder in (self.tmp_dir, self.uploads_dir, self.root / "blobs", self.root / "repos"):
            folder.mkdir(parents=True, exist_ok=True)
        self._blob_thread_lock = threading.RLock()
        self._commit_cache: dict[tuple[RepoId, str], Commit] = {}
        self._cache_lock = threading.Lock()
        self._held = threading.local()
        self._mark_older_repos()
        if self._upgrade:
            self._write_atomic(self.root / "hub.json", json.dumps({"format": _FORMAT}).encode())
        self.sweep()

    def _check_or_initialise(self) -> None:
        marker = self.root / "hub.json"
        if marker.is_file():
            try:
                found = json.loads(marker.read_text()).get("format")
            except (OSError, ValueError, AttributeError) as e:
                raise HubDataDirError(
                    f"Cannot read the local Hub marker {str(marker)!r}: {e}. Point the server at"
                    " the folder it created, or at an empty folder to start a new store."
                ) from e
            if found in _UPGRADABLE:
                self._upgrade = True
                return
            if found != _FORMAT:
                raise HubDataDirError(
                    f"The data folder {str(self.root)!r} holds local Hub format {found!r}, this"
                    f" version reads {_FORMAT!r}. Use a new, empty data folder."
                )
            return
        if self.root.exists() and (not self.root.is_dir() or any(self.root.iterdir())):
            raise HubDataDirError(
                f"The data folder {str(self.root)!r} exists, is not empty and is not a local Hub"
                " store (no hub.json). Pass an empty or new folder so that no files are mixed in."
            )
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "tmp").mkdir(exist_ok=True)
        self._write_atomic(
            marker, json.dumps({"format": _FORMAT}).encode(), tmp_dir=self.root / "tmp"
        )

    def _mark_older_repos(self) -> None:
        """Give repositories of an older store (no ``objects/``) the markers of all their blobs."""
        for folder in (self.root / "repos").glob("*/*/*"):
            if (folder / "objects").is_dir() or not (folder / "repo.json").is_file():
                continue
            staging = folder / f"objects.{uuid.uuid4().hex}"
            staging.mkdir()
            for commit_file in (folder / "commits").glob("*.json"):
                data = json.loads(commit_file.read_text())
                for entries in (data.get("files") or {}, data.get("changes") or {}):
                    for entry in entries.values():
                        if entry is not None:
                            (staging / entry["sha256"]).touch()
            with contextlib.suppress(OSError):  # another server migrated it meanwhile
                os.rename(staging, folder / "objects")
            shutil.rmtree(staging, ignore_errors=True)

    def sweep(self) -> None:
        """Remove what killed writers left in ``tmp/`` (unchanged for ``stale_after`` seconds).

        Other servers may share the folder, so only files idle long enough not to
        be in flight are removed.
        """
        cutoff = time.time() - self.stale_after
        for path in self.tmp_dir.iterdir():
            with contextlib.suppress(OSError):
                if path.lstat().st_mtime < cutoff:
                    if path.is_dir():
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        path.unlink()

    # ----------------------------------------------------------------- files

    def new_temp_path(self) -> Path:
        """A fresh path in ``tmp/``, for a file to be renamed into place once complete."""
        return self.tmp_dir / uuid.uuid4().hex

    def _write_atomic(self, path: Path, data: bytes, tmp_dir: Path | None = None) -> None:
        tmp = (tmp_dir or self.tmp_dir) / uuid.uuid4().hex
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    def _write_json(self, path: Path, data: Any) -> None:
        self._write_atomic(path, json.dumps(data, indent=1, sort_keys=True).encode())

    # ----------------------------------------------------------------- blobs

    def blob_path(self, sha256: str) -> Path:
        return self.root / "blobs" / sha256[:2] / sha256

    @contextlib.contextmanager
    def blobs_locked(self) -> Iterator[None]:
        """Hold the store-wide lock on blobs and markers (threads and processes)."""
        lock_path = self.root / "locks" / "blobs.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with self._blob_thread_lock, FileLock(str(lock_path)):
            yield

    def _marker(self, repo: RepoId, sha256: str) -> Path:
        return self._repo_dir(repo) / "objects" / sha256

    def repo_has_object(self, repo: RepoId, sha256: str) -> bool:
        """Whether ``repo`` received the content ``sha256`` (and so may reference it)."""
        return self._marker(repo, sha256).exists()

    def _mark(self, repo: RepoId, sha256: str) -> None:
        marker = self._marker(repo, sha256)
        if not marker.exists():
            if not marker.parent.parent.is_dir():
                raise self._not_found(repo)
            marker.parent.mkdir(exist_ok=True)
            marker.touch()

    def collect_blobs(self, candidates: set[str] | None = None) -> int:
        """Delete blobs no repository marks (only ``candidates`` if given); returns how many."""
        deleted = 0
        with self.blobs_locked():
            marked = {m.name for m in (self.root / "repos").glob("*/*/*/objects/*")}
            if candidates is None:
                candidates = {b.name for b in (self.root / "blobs").glob("*/*")}
            for sha256 in candidates - marked:
                with contextlib.suppress(FileNotFoundError):
                    self.blob_path(sha256).unlink()
                    deleted += 1
        return deleted

    def has_blob(self, sha256: str, size: int | None = None) -> bool:
        try:
            found = self.blob_path(sha256).stat().st_size
        except FileNotFoundError:
            return False
        return size is None or found == size

    def put_blob(self, content: bytes, repo: RepoId) -> str:
        """Store ``content`` (if new) for ``repo`` and return its sha256."""
        sha256 = hashlib.sha256(content).hexdigest()
        with self.blobs_locked():
            self._mark(repo, sha256)
            if not self.has_blob(sha256, len(content)):
                self._write_atomic(self.blob_path(sha256), content)
        return sha256

    def adopt_blob(self, tmp_file: Path, sha256: str, repo: RepoId) -> None:
        """Move a complete, verified file from ``tmp/`` into the blob store, for ``repo``."""
        with open(tmp_file, "rb+") as f:
            os.fsync(f.fileno())
        target = self.blob_path(sha256)
        target.parent.mkdir(parents=True, exist_ok=True)
        with self.blobs_locked():
            self._mark(repo, sha256)
            if self.has_blob(sha256):
                tmp_file.unlink(missing_ok=True)  # stored already (for another repo)
            else:
                os.replace(tmp_file, target)

    # ----------------------------------------------------------------- repos

    def _repo_dir(self, repo: RepoId) -> Path:
        return self.root / "repos" / f"{repo.type}s" / repo.namespace / repo.name

    @contextlib.contextmanager
    def locked(self, repo: RepoId) -> Iterator[None]:
        """Hold the repository's write lock (threads and processes); re-entrant per thread."""
        held: set[RepoId] = self._held.__dict__.setdefault("repos", set())
        if repo in held:
            yield
            return
        lock_path = self.root / "locks" / f"{repo.type}s" / repo.namespace / f"{repo.name}.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(lock_path)):
            held.add(repo)
            try:
                yield
            finally:
                held.discard(repo)

    def create_repo(
        self,
        repo: RepoId,
        *,
        private: bool,
        initial: Commit,
        contents: list[bytes],
        shared_from: RepoId | None = None,
    ) -> dict[str, Any]:
        """Create a repository whose ``main`` branch points at ``initial`` (files: ``contents``).

        With ``shared_from``, the blobs of ``initial`` are that repository's (a duplicate).
        """
        final = self._repo_dir(repo)
        if final.exists():
            raise HubConflictError(
                f"The {repo.describe()} already exists: pass exist_ok=True to reuse it, or"
                " delete it first."
            )
        meta = {
            "_id": uuid.uuid4().hex[:24],
            "id": repo.id,
            "type": repo.type,
            "private": private,
            "createdAt": initial.date,
        }
        staging = self.tmp_dir / f"repo-{uuid.uuid4().hex}"
        (staging / "commits").mkdir(parents=True)
        try:
            (staging / "repo.json").write_text(json.dumps(meta, indent=1))
            (staging / "refs.json").write_text(json.dumps({"refs/heads/main": initial.id}))
            (staging / "commits" / f"{initial.id}.json").write_text(json.dumps(initial.to_json()))
            (staging / "objects").mkdir()
            for entry in initial.files.values():
                if shared_from is not None and not self.repo_has_object(shared_from, entry.sha256):
                    raise HubBadRequestError(f"{shared_from.describe()} lacks {entry.sha256!r}.")
                (staging / "objects" / entry.sha256).touch()
            final.parent.mkdir(parents=True, exist_ok=True)
            with self.locked(repo), self.blobs_locked():
                for content in contents:
                    sha256 = hashlib.sha256(content).hexdigest()
                    if not self.has_blob(sha256, len(content)):
                        self._write_atomic(self.blob_path(sha256), content)
                try:
                    os.rename(staging, final)
                except OSError as e:
                    raise HubConflictError(
                        f"The {repo.describe()} already exists: pass exist_ok=True to reuse it,"
                        " or delete it first."
                    ) from e
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return meta

    def delete_repo(self, repo: RepoId) -> None:
        folder = self._repo_dir(repo)
        trash = self.tmp_dir / f"deleted-{uuid.uuid4().hex}"
        with self.locked(repo):
            try:
                os.rename(folder, trash)
            except FileNotFoundError as e:
                raise self._not_found(repo) from e
        held = {marker.name for marker in (trash / "objects").glob("*")}
        shutil.rmtree(trash, ignore_errors=True)
        self.collect_blobs(held)
        with self._cache_lock:
            for key in [key for key in self._commit_cache if key[0] == repo]:
                del self._commit_cache[key]

    def move_repo(self, source: RepoId, target: RepoId) -> None:
        """Rename ``source`` to ``target`` (same type), with its history, refs and blobs."""
        first, second = sorted((source, target), key=lambda repo: repo.id)
        with self.locked(first), self.locked(second):
            folder, destination = self._repo_dir(source), self._repo_dir(target)
            if not folder.is_dir():
                raise self._not_found(source)
            if destination.exists():
                raise HubConflictError(
                    f"The {target.describe()} already exists: pick another name or delete it."
                )
            destination.parent.mkdir(parents=True, exist_ok=True)
            meta = self.repo_meta(source)
            meta["id"] = target.id
            self._write_json(folder / "repo.json", meta)
            os.rename(folder, destination)
        with self._cache_lock:
            for key in [key for key in self._commit_cache if key[0] == source]:
                del self._commit_cache[key]

    def list_repos(self, repo_type: str) -> list[RepoId]:
        """Every repository of one type, sorted by id."""
        root = self.root / "repos" / f"{repo_type}s"
        found = [
            RepoId(repo_type, meta.parent.parent.name, meta.parent.name)
            for meta in root.glob("*/*/repo.json")
        ]
        return sorted(found, key=lambda repo: repo.id)

    def repo_meta(self, repo: RepoId) -> dict[str, Any]:
        try:
            return json.loads((self._repo_dir(repo) / "repo.json").read_text())
        except FileNotFoundError as e:
            raise self._not_found(repo) from e

    def update_repo_meta(self, repo: RepoId, changes: Mapping[str, Any]) -> None:
        with self.locked(repo):
            meta = self.repo_meta(repo)
            meta.update(changes)
            self._write_json(self._repo_dir(repo) / "repo.json", meta)

    @staticmethod
    def _not_found(repo: RepoId) -> HubRepositoryNotFoundError:
        return HubRepositoryNotFoundError(
            f"The {repo.describe()} does not exist on this local Hub: create it with"
            f" HfApi.create_repo({repo.id!r}, repo_type={repo.type!r}), and check repo_type."
        )

    # ------------------------------------------------------ refs and commits

    def refs(self, repo: RepoId) -> dict[str, str]:
        try:
            return json.loads((self._repo_dir(repo) / "refs.json").read_text())
        except FileNotFoundError as e:
            raise self._not_found(repo) from e

    def update_refs(
        self, repo: RepoId, change: Callable[[dict[str, str]], dict[str, str]]
    ) -> dict[str, str]:
        """Replace the refs with ``change(current refs)``, atomically, under the repo lock.

        Callers that build a commit hold `locked` around reading the head, writing
        the commit and calling this, so no other writer moves the ref in between.
        """
        with self.locked(repo):
            new_refs = change(self.refs(repo))
            if DEFAULT_REF not in new_refs:
                raise HubBadRequestError(
                    f"The default branch {DEFAULT_REF!r} of the {repo.describe()} cannot be"
                    " removed: delete the repo instead."
                )
            self._write_json(self._repo_dir(repo) / "refs.json", new_refs)
        return new_refs

    def write_commit(self, repo: RepoId, commit: Commit) -> None:
        path = self._repo_dir(repo) / "commits" / f"{commit.id}.json"
        if not path.parent.is_dir():
            raise self._not_found(repo)
        if not path.exists():
            self._write_atomic(path, json.dumps(commit.to_json()).encode())

    def read_commit(self, repo: RepoId, commit_id: str) -> Commit:
        key = (repo, commit_id)
        with self._cache_lock:
            cached = self._commit_cache.get(key)
        if cached is not None:
            return cached
        path = self._repo_dir(repo) / "commits" / f"{commit_id}.json"
        try:
            data = json.loads(path.read_text())
            commit = Commit.from_json(data, lambda parent: self.read_commit(repo, parent).files)
        except FileNotFoundError as e:
            self.repo_meta(repo)  # raises if the repo itself is missing
            raise HubRevisionNotFoundError(
                f"Commit {commit_id!r} does not exist in the {repo.describe()}."
            ) from e
        with self._cache_lock:
            if len(self._commit_cache) >= _COMMIT_CACHE_SIZE:
                self._commit_cache.clear()
            self._commit_cache[key] = commit
        return commit

    def resolve(self, repo: RepoId, revision: str) -> tuple[str | None, Commit]:
        """The full ref name (None for a commit id) and the commit a revision points at."""
        refs = self.refs(repo)
        if revision.startswith("refs/"):
            candidates = [revision]
        else:
            candidates = [f"refs/heads/{revision}", f"refs/tags/{revision}"]
        for ref in candidates:
            if ref in refs:
                return ref, self.read_commit(repo, refs[ref])
        if COMMIT_ID.match(revision):
            with contextlib.suppress(HubRevisionNotFoundError):
                return None, self.read_commit(repo, revision)
        raise HubRevisionNotFoundError(
            f"Invalid rev id: {revision!r} is not a branch, tag, pull-request ref or commit of"
            f" the {repo.describe()}. List them with HfApi.list_repo_refs({repo.id!r},"
            f" repo_type={repo.type!r}, include_pull_requests=True)."
        )

    def changed_files(self, repo: RepoId, commit: Commit) -> Mapping[str, FileEntry | None]:
        """What ``commit`` changed against its first parent: path -> new entry, None if deleted."""
        if commit.changes is not None:
            return commit.changes
        # A commit of an older store, which kept whole trees only.
        parent = self.read_commit(repo, commit.parents[0]).files if commit.parents else {}
        both = commit.files.keys() | parent.keys()
        return {p: commit.files.get(p) for p in both if commit.files.get(p) != parent.get(p)}

    def touched_paths(self, repo: RepoId, commit: Commit) -> set[str]:
        """The paths ``commit`` changed against its first parent, and their folders."""
        changed = set(self.changed_files(repo, commit))
        out = set(changed)
        for path in changed:
            parts = path.split("/")[:-1]
            out.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        return out

    def history(self, repo: RepoId, head: Commit) -> Iterator[Commit]:
        """``head`` and its first-parent ancestors, newest first."""
        commit: Commit | None = head
        while commit is not None:
            yield commit
            commit = self.read_commit(repo, commit.parents[0]) if commit.parents else None


def new_initial_commit(author: str, gitattributes: bytes, store: HubStore) -> Commit:
    """The commit a new repository starts with: a ``.gitattributes`` file, like the Hub's.

    `HubStore.create_repo` stores its blob (``contents``).
    """
    return Commit.create(
        parent=None,
        changes={".gitattributes": FileEntry.regular(gitattributes)},
        title="initial commit",
        message="",
        author=author,
        date=now_iso(),
    )

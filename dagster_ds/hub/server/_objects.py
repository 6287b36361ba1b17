"""The objects a local Hub repository is made of: file entries, commits, revision names.

Ids follow git where the Hub exposes them: a regular file's ``oid`` is its git
blob id (sha1 of ``blob <size>``, a NUL byte, then the content); an LFS file's ``oid`` is the git
blob id of its LFS pointer, and its ``lfs.oid`` is the sha256 of the content.
Commit ids are 40 hex characters (sha1 of the commit's canonical JSON).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from dagster_ds.hub import is_valid_repo_name
from dagster_ds.hub.server._errors import HubBadRequestError

COMMIT_ID = re.compile(r"^[0-9a-f]{40}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
REPO_TYPES = ("model", "dataset", "space")


def git_blob_oid(content: bytes) -> str:
    """The git blob id of ``content``."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content, usedforsecurity=False).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    """The text of the LFS pointer file git stores in place of an LFS file."""
    return (
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()
    )


def now_iso() -> str:
    """The current UTC time in the Hub's format (``2024-01-31T12:00:00.000Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass(frozen=True)
class RepoId:
    """A repository's type (``model``, ``dataset``, ``space``) and ``namespace/name``."""

    type: str
    namespace: str
    name: str

    @classmethod
    def parse(cls, repo_type: str | None, namespace: str, name: str) -> RepoId:
        repo_type = repo_type or "model"
        if repo_type not in REPO_TYPES:
            raise HubBadRequestError(
                f"Unknown repo type {repo_type!r}: use one of {', '.join(REPO_TYPES)}."
            )
        for part in (namespace, name):
            if not is_valid_repo_name(part):
                raise HubBadRequestError(
                    f"Invalid repo id {(namespace + '/' + name)[:250]!r}: namespace and name use"
                    " letters, digits, '-', '_' and '.', do not start or end with '-' or '.',"
                    " have no '--' or '..', and are at most 96 characters."
                )
        return cls(repo_type, namespace, name)

    @property
    def id(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def url_prefix(self) -> str:
        """The web-URL prefix of the repo type (``datasets/``; empty for models)."""
        return "" if self.type == "model" else f"{self.type}s/"

    def describe(self) -> str:
        return f"{self.type} repo {self.id!r}"


@dataclass(frozen=True)
class FileEntry:
    """One file of a commit's tree."""

    sha256: str
    size: int
    oid: str
    lfs: bool

    @classmethod
    def regular(cls, content: bytes) -> FileEntry:
        return cls(hashlib.sha256(content).hexdigest(), len(content), git_blob_oid(content), False)

    @classmethod
    def large(cls, sha256: str, size: int) -> FileEntry:
        return cls(sha256, size, git_blob_oid(lfs_pointer(sha256, size)), True)

    def to_json(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "size": self.size, "oid": self.oid, "lfs": self.lfs}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FileEntry:
        return cls(data["sha256"], data["size"], data["oid"], data["lfs"])

    @property
    def etag(self) -> str:
        """What the Hub sends as the file's ETag: sha256 for LFS files, git blob id otherwise."""
        return self.sha256 if self.lfs else self.oid

    def api_json(self, path: str) -> dict[str, Any]:
        """The entry as the tree and paths-info endpoints return it."""
        out: dict[str, Any] = {"type": "file", "oid": self.oid, "size": self.size, "path": path}
        if self.lfs:
            pointer_size = len(lfs_pointer(self.sha256, self.size))
            out["lfs"] = {"oid": self.sha256, "size": self.size, "pointerSize": pointer_size}
        return out


SNAPSHOT_EVERY = 100


@dataclass(frozen=True)
class Commit:
    """An immutable snapshot: the whole file tree plus who, when and why.

    On disk a commit stores only its ``changes`` against its first parent (a
    path mapped to its new entry, or None when deleted), so a commit costs
    O(changed files); every `SNAPSHOT_EVERY`-th commit of a chain also stores the
    whole tree, so reading one never replays more than that many commits.
    """

    id: str
    parents: tuple[str, ...]
    files: Mapping[str, FileEntry] = field(repr=False)
    title: str
    message: str
    author: str
    date: str
    changes: Mapping[str, FileEntry | None] | None = field(default=None, repr=False)
    chain: int = 0  # commits since the last one storing the whole tree

    @classmethod
    def create(
        cls,
        *,
        parent: Commit | None,
        changes: Mapping[str, FileEntry | None],
        title: str,
        message: str,
        author: str,
        date: str | None = None,
    ) -> Commit:
        files = dict(parent.files) if parent is not None else {}
        for path, entry in changes.items():
            if entry is None:
                files.pop(path, None)
            else:
                files[path] = entry
        chain = 0 if parent is None or parent.chain + 1 >= SNAPSHOT_EVERY else parent.chain + 1
        body = {
            "parents": [parent.id] if parent is not None else [],
            "changes": _entries_json(changes),
            "title": title,
            "message": message,
            "author": author,
            "date": date or now_iso(),
        }
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        commit_id = hashlib.sha1(b"commit " + canonical, usedforsecurity=False).hexdigest()
        return cls(
            id=commit_id,
            parents=tuple(body["parents"]),
            files=files,
            title=title,
            message=message,
            author=author,
            date=body["date"],
            changes=dict(changes),
            chain=chain,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "parents": list(self.parents),
            "title": self.title,
            "message": self.message,
            "author": self.author,
            "date": self.date,
            "chain": self.chain,
        }
        if self.changes is not None:
            out["changes"] = _entries_json(self.changes)
        if self.chain == 0 or self.changes is None:
            out["files"] = _entries_json(self.files)
        return out

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], parent_files: Callable[[str], Mapping[str, FileEntry]]
    ) -> Commit:
        """A commit read back; ``parent_files`` gives a parent's tree when only changes are kept."""
        changes = None
        if "changes" in data:
            changes = {
                path: None if entry is None else FileEntry.from_json(entry)
                for path, entry in data["changes"].items()
            }
        if "files" in data:
            files = {path: FileEntry.from_json(entry) for path, entry in data["files"].items()}
        else:
            assert changes is not None
            files = dict(parent_files(data["parents"][0]))
            for path, entry in changes.items():
                if entry is None:
                    files.pop(path, None)
                else:
                    files[path] = entry
        return cls(
            id=data["id"],
            parents=tuple(data["parents"]),
            files=files,
            title=data["title"],
            message=data["message"],
            author=data["author"],
            date=data["date"],
            changes=changes,
            chain=int(data.get("chain", 0)),
        )

    @functools.cached_property
    def folders(self) -> frozenset[str]:
        """Every folder that holds at least one file (the root excluded)."""
        out: set[str] = set()
        for path in self.files:
            parts = path.split("/")[:-1]
            out.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        return frozenset(out)

    def files_under(self, folder: str) -> dict[str, FileEntry]:
        prefix = f"{folder}/" if folder else ""
        return {path: entry for path, entry in self.files.items() if path.startswith(prefix)}

    @functools.cached_property
    def folder_oids(self) -> Mapping[str, str]:
        """A stable id of each folder's content (sha1 of its files' paths and ids), one pass."""
        hashers: dict[str, Any] = {}
        for path in sorted(self.files):
            line = f"{path}\0{self.files[path].oid}\n".encode()
            parts = path.split("/")[:-1]
            for i in range(len(parts)):
                folder = "/".join(parts[: i + 1])
                hasher = hashers.get(folder)
                if hasher is None:
                    hasher = hashers[folder] = hashlib.sha1(b"tree ", usedforsecurity=False)
                hasher.update(line)
        return {folder: hasher.hexdigest() for folder, hasher in hashers.items()}

    def api_json(self) -> dict[str, Any]:
        """The commit as ``list_repo_commits`` expects it."""
        return {
            "id": self.id,
            "title": self.title,
            "message": self.message,
            "authors": [{"user": self.author}],
            "date": self.date,
        }


def _entries_json(entries: Mapping[str, FileEntry | None]) -> dict[str, Any]:
    return {
        path: None if entries[path] is None else entries[path].to_json()  # pyright: ignore[reportOptionalMemberAccess]
        for path in sorted(entries)
    }


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogatepass")


MAX_PATH_BYTES = 1024
MAX_SEGMENT_BYTES = 255
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def validate_path(path: str) -> str:
    """Check a path inside a repository and return it.

    Refused: a leading ``/`` (clients never send one: a caller that does has a
    bug), empty, ``.``, ``..`` and ``.git`` segments, backslashes, control
    characters (CR, LF, NUL...), segments over 255 bytes and paths over 1024.
    """
    if path.startswith("/"):
        raise HubBadRequestError(
            f"Invalid path in repo {path[:200]!r}: it starts with '/'; paths are relative to the"
            " repository root, like 'data/train.parquet'."
        )
    parts = path.split("/")
    bad = (
        not path
        or path.endswith("/")
        or any(part in ("", ".", "..") for part in parts)
        or ".git" in parts
        or "\\" in path
        or _CONTROL.search(path) is not None
        or len(path.encode("utf-8", errors="surrogatepass")) > MAX_PATH_BYTES
        or any(
            len(part.encode("utf-8", errors="surrogatepass")) > MAX_SEGMENT_BYTES for part in parts
        )
    )
    if bad:
        raise HubBadRequestError(
            f"Invalid path in repo {path[:200]!r}: use a relative path like"
            " 'data/train.parquet' without empty, '.', '..' or '.git' segments, backslashes or"
            f" control characters, at most {MAX_PATH_BYTES} bytes ({MAX_SEGMENT_BYTES} per"
            " segment)."
        )
    return path


DEFAULT_REF = "refs/heads/main"


def ref_in_namespace(name: str, prefix: str, what: str) -> str:
    """The full ref of a branch (``prefix="refs/heads/"``) or tag named short or in full.

    Branches and tags are separate name spaces: a full name from another one
    (``refs/tags/v1`` given as a branch) is refused rather than resolved.
    """
    if name.startswith(prefix):
        name = name[len(prefix) :]
    elif name.startswith("refs/"):
        raise HubBadRequestError(
            f"{name!r} is not a {what}: name a {what} as 'name' or '{prefix}name'."
        )
    if not name:
        raise HubBadRequestError(f"The {what} name is empty.")
    return prefix + name

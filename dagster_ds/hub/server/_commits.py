"""Commits: parse the client's NDJSON payload, apply its operations, move the ref atomically.

The payload ``create_commit`` sends is one JSON object per line: a ``header``
(summary, description, optional ``parentCommit``), then ``file`` (base64 content),
``lfsFile`` (sha256 of content uploaded through the LFS API), ``deletedFile`` and
``deletedFolder`` operations, applied in order. The payload is read line by line
from the file it was streamed to, and each regular file's content goes to the
blob store as soon as its line is read, so memory holds one line at a time.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dagster_ds.hub.server._errors import (
    HubBadRequestError,
    HubEntryNotFoundError,
    HubPayloadTooLargeError,
    HubStaleParentError,
)
from dagster_ds.hub.server._objects import SHA256, Commit, FileEntry, RepoId, validate_path
from dagster_ds.hub.server._payload import as_object, integer, parse_json, text
from dagster_ds.hub.server._store import HubStore


@dataclass(frozen=True)
class AddRegular:
    path: str
    entry: FileEntry


@dataclass(frozen=True)
class AddLfs:
    path: str
    sha256: str
    size: int | None


@dataclass(frozen=True)
class DeleteFile:
    path: str


@dataclass(frozen=True)
class DeleteFolder:
    path: str


Operation = AddRegular | AddLfs | DeleteFile | DeleteFolder


@dataclass
class CommitRequest:
    """A parsed commit payload."""

    summary: str
    description: str = ""
    parent_commit: str | None = None
    operations: list[Operation] = field(default_factory=list)


@dataclass(frozen=True)
class CommitResult:
    commit: Commit
    ref: str
    pr_number: int | None


def _field(value: Mapping[str, Any], key: str, line_no: int) -> str:
    found = text(value, key, f"Commit payload line {line_no}")
    if found is None:
        raise HubBadRequestError(
            f"Commit payload line {line_no}: missing {key!r} in {dict(value)!r:.200}; each"
            " operation line is {'key': ..., 'value': {...}} as huggingface_hub's create_commit"
            " sends it."
        )
    return found


def parse_commit_payload(
    lines: Iterable[bytes], store: HubStore, repo: RepoId, *, max_line: int
) -> CommitRequest:
    """Parse an NDJSON commit payload (header line first, then one operation per line).

    Regular files' contents are stored for ``repo`` as their lines are read.
    """
    request: CommitRequest | None = None
    for line_no, raw in enumerate(lines, start=1):
        if len(raw) > max_line:
            raise HubPayloadTooLargeError(
                f"Commit payload line {line_no} is longer than {max_line} bytes: upload large"
                " files through LFS (preupload answers 'lfs' for them)."
            )
        if not raw.strip():
            continue
        what = f"Commit payload line {line_no}"
        item = parse_json(raw, what)
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise HubBadRequestError(
                f"{what} is not a {{'key', 'value'}} JSON object: {raw[:200]!r}. Send"
                " application/x-ndjson as create_commit does."
            )
        key = item["key"]
        value = as_object(item.get("value"), f"{what}: 'value'")
        if key == "header":
            request = CommitRequest(
                summary=text(value, "summary", what, default="") or "",
                description=text(value, "description", what, default="") or "",
                parent_commit=text(value, "parentCommit", what),
            )
            continue
        if request is None:
            raise HubBadRequestError(
                f"Commit payload line {line_no} ({key!r}) comes before the 'header' line: the"
                " first line must be {'key': 'header', 'value': {'summary': ...}}."
            )
        operation = _parse_operation(key, value, line_no)
        if isinstance(operation, bytes | tuple):
            path, content = operation
            store.put_blob(content, repo)
            request.operations.append(AddRegular(path, FileEntry.regular(content)))
        else:
            request.operations.append(operation)
    if request is None:
        raise HubBadRequestError(
            "Commit payload has no 'header' line: send at least"
            " {'key': 'header', 'value': {'summary': 'my commit'}}."
        )
    if not request.summary:
        raise HubBadRequestError("Commit summary is empty: pass a non-empty commit_message.")
    return request


def read_lines(path: Path, max_line: int) -> Iterator[bytes]:
    """The lines of ``path``, none longer than ``max_line`` + 1 bytes in memory."""
    with open(path, "rb") as f:
        while line := f.readline(max_line + 1):
            yield line


def _parse_operation(
    key: str, value: Mapping[str, Any], line_no: int
) -> Operation | tuple[str, bytes]:
    """The operation of one line; a regular file is ``(path, content)`` until it is stored."""
    if key == "file":
        path = validate_path(_field(value, "path", line_no))
        encoding = text(value, "encoding", f"Commit payload line {line_no}", default="base64")
        content = text(value, "content", f"Commit payload line {line_no}", default="") or ""
        if encoding == "base64":
            try:
                return path, base64.b64decode(content, validate=True)
            except (binascii.Error, ValueError, TypeError) as e:
                raise HubBadRequestError(
                    f"Commit payload line {line_no}: content of {path!r} is not valid base64."
                ) from e
        if encoding in ("utf-8", "utf8"):
            return path, content.encode()
        raise HubBadRequestError(
            f"Commit payload line {line_no}: unknown encoding {encoding!r} for {path!r};"
            " use 'base64'."
        )
    if key == "lfsFile":
        path = validate_path(_field(value, "path", line_no))
        oid = _field(value, "oid", line_no)
        algo = text(value, "algo", f"Commit payload line {line_no}", default="sha256")
        if algo != "sha256" or not SHA256.match(oid):
            raise HubBadRequestError(
                f"Commit payload line {line_no}: LFS file {path!r} needs a sha256 oid (64 hex"
                f" characters), got algo={algo!r} oid={oid!r}."
            )
        size = integer(value, "size", f"Commit payload line {line_no}")
        return AddLfs(path, oid, size)
    if key == "deletedFile":
        return DeleteFile(validate_path(_field(value, "path", line_no)))
    if key == "deletedFolder":
        folder = _field(value, "path", line_no).rstrip("/")
        if not folder:
            raise HubBadRequestError(
                f"Commit payload line {line_no}: deleting the folder {folder or '/'!r} would"
                " delete the whole repository, .gitattributes included; delete the files you"
                " mean, or the repository."
            )
        return DeleteFolder(validate_path(folder))
    raise HubBadRequestError(
        f"Commit payload line {line_no}: unknown operation {key!r}; this server understands"
        " 'file', 'lfsFile', 'deletedFile' and 'deletedFolder'."
    )


def apply_operations(
    store: HubStore, repo: RepoId, head: Commit, operations: list[Operation]
) -> dict[str, FileEntry | None]:
    """The changes ``operations`` make to ``head``: path -> new entry, or None if deleted."""
    changes: dict[str, FileEntry | None] = {}
    files = head.files

    def current(path: str) -> FileEntry | None:
        return changes[path] if path in changes else files.get(path)

    for op in operations:
        match op:
            case AddRegular(path, entry):
                changes[path] = entry
            case AddLfs(path, sha256, size):
                if not store.has_blob(sha256, size) or not store.repo_has_object(repo, sha256):
                    raise HubBadRequestError(
                        f"LFS object {sha256!r} for {path!r} was never uploaded to this"
                        f" repository (or its size is not {size!r}): upload it through the LFS"
                        " batch API first, as create_commit/preupload_lfs_files do."
                    )
                actual = store.blob_path(sha256).stat().st_size
                changes[path] = FileEntry.large(sha256, actual)
            case DeleteFile(path):
                if current(path) is None:
                    raise HubEntryNotFoundError(
                        f"A file with this name doesn't exist: {path!r}. To delete a folder,"
                        " use delete_folder or a path ending with '/'."
                    )
                changes[path] = None
            case DeleteFolder(folder):
                prefix = folder + "/"
                doomed = {p for p in files if p.startswith(prefix)}
                doomed |= {p for p, e in changes.items() if e is not None and p.startswith(prefix)}
                doomed = {p for p in doomed if current(p) is not None}
                if not doomed:
                    raise HubEntryNotFoundError(
                        f"A folder with this name doesn't exist: {folder!r}. List the repo with"
                        " list_repo_tree to see its folders."
                    )
                changes.update(dict.fromkeys(doomed))
    _check_no_file_folder_clash(head, changes)
    return changes


def _check_no_file_folder_clash(head: Commit, changes: Mapping[str, FileEntry | None]) -> None:
    """No added file may sit where a folder is, or under a path that is a file (O(changes))."""
    files = head.files

    def exists(path: str) -> bool:
        return changes[path] is not None if path in changes else path in files

    added = [path for path, entry in changes.items() if entry is not None]
    folders_added = {"/".join(p.split("/")[:i]) for p in added for i in range(1, p.count("/") + 1)}
    for path in added:
        parts = path.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            if exists(prefix):
                raise HubBadRequestError(
                    f"Path {path!r} needs a folder {prefix!r}, but {prefix!r} is a file in this"
                    " commit: delete or rename one of them."
                )
    for folder in folders_added:
        if folder in changes and changes[folder] is not None:
            raise HubBadRequestError(
                f"{folder!r} is both a file and a folder in this commit: rename one of them."
            )
    # A new file where the parent tree has a folder.
    for path in added:
        prefix = path + "/"
        if path in head.folders and any(p.startswith(prefix) and exists(p) for p in files):
            raise HubBadRequestError(
                f"Path {path!r} is a folder in this repository: delete it first or pick another"
                " name."
            )


def make_commit(
    store: HubStore,
    repo: RepoId,
    *,
    revision: str,
    request: CommitRequest,
    author: str,
    create_pr: bool,
) -> CommitResult:
    """Apply ``request`` on top of ``revision`` and publish it in one atomic ref update.

    With ``create_pr``, the commit goes to a new ``refs/pr/<N>`` based on ``revision``
    and ``revision`` itself does not move.
    """
    with store.locked(repo):
        ref, head = store.resolve(repo, revision)
        if ref is None or not ref.startswith(("refs/heads/", "refs/pr/")):
            raise HubBadRequestError(
                f"Cannot commit to {revision!r} of the {repo.describe()}: it is a"
                f" {'commit id' if ref is None else 'tag'}, not a branch. Commit to a branch"
                " (create one with create_branch) or pass create_pr=True."
            )
        if request.parent_commit is not None and request.parent_commit != head.id:
            raise HubStaleParentError(
                f"parent_commit {request.parent_commit!r} is not the head of {revision!r} any"
                f" more (it is {head.id!r}): someone committed in between. Fetch the new head"
                " with repo_info and retry."
            )
        changes = apply_operations(store, repo, head, request.operations)
        commit = Commit.create(
            parent=head,
            changes=changes,
            title=request.summary,
            message=request.description,
            author=author,
        )
        store.write_commit(repo, commit)
        pr_number: int | None = None
        if create_pr:
            refs = store.refs(repo)
            numbers = [int(r.rsplit("/", 1)[1]) for r in refs if r.startswith("refs/pr/")]
            pr_number = max(numbers, default=0) + 1
            ref = f"refs/pr/{pr_number}"
        target = ref

        def move(refs: dict[str, str]) -> dict[str, str]:
            return {**refs, target: commit.id}

        store.update_refs(repo, move)
    return CommitResult(commit, target, pr_number)

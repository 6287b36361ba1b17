"""Commits: parse the client's NDJSON payload, apply its operations, move the ref atomically.

The payload ``create_commit`` sends is one JSON object per line: a ``header``
(summary, description, optional ``parentCommit``), then ``file`` (base64 content),
``lfsFile`` (sha256 of content uploaded through the LFS API), ``deletedFile`` and
``deletedFolder`` operations, applied in order.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dagster_ds.hub.server._errors import (
    HubBadRequestError,
    HubEntryNotFoundError,
    HubStaleParentError,
)
from dagster_ds.hub.server._objects import SHA256, Commit, FileEntry, RepoId, validate_path
from dagster_ds.hub.server._payload import as_object, integer, parse_json, text
from dagster_ds.hub.server._store import HubStore


@dataclass(frozen=True)
class AddRegular:
    path: str
    content: bytes


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


def parse_commit_payload(body: bytes) -> CommitRequest:
    """Parse an NDJSON commit payload (header line first, then one operation per line)."""
    request: CommitRequest | None = None
    for line_no, raw in enumerate(body.splitlines(), start=1):
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
        request.operations.append(_parse_operation(key, value, line_no))
    if request is None:
        raise HubBadRequestError(
            "Commit payload has no 'header' line: send at least"
            " {'key': 'header', 'value': {'summary': 'my commit'}}."
        )
    if not request.summary:
        raise HubBadRequestError("Commit summary is empty: pass a non-empty commit_message.")
    return request


def _parse_operation(key: str, value: Mapping[str, Any], line_no: int) -> Operation:
    if key == "file":
        path = validate_path(_field(value, "path", line_no))
        encoding = text(value, "encoding", f"Commit payload line {line_no}", default="base64")
        content = text(value, "content", f"Commit payload line {line_no}", default="") or ""
        if encoding == "base64":
            try:
                return AddRegular(path, base64.b64decode(content, validate=True))
            except (binascii.Error, ValueError, TypeError) as e:
                raise HubBadRequestError(
                    f"Commit payload line {line_no}: content of {path!r} is not valid base64."
                ) from e
        if encoding in ("utf-8", "utf8"):
            return AddRegular(path, content.encode())
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
        return DeleteFolder(validate_path(folder))
    raise HubBadRequestError(
        f"Commit payload line {line_no}: unknown operation {key!r}; this server understands"
        " 'file', 'lfsFile', 'deletedFile' and 'deletedFolder'."
    )


def apply_operations(
    store: HubStore, files: Mapping[str, FileEntry], operations: list[Operation]
) -> dict[str, FileEntry]:
    """The file tree after ``operations``; writes regular files' blobs to the store."""
    tree = dict(files)
    for op in operations:
        match op:
            case AddRegular(path, content):
                store.put_blob(content)
                tree[path] = FileEntry.regular(content)
            case AddLfs(path, sha256, size):
                if not store.has_blob(sha256, size):
                    raise HubBadRequestError(
                        f"LFS object {sha256!r} for {path!r} was never uploaded (or its size is"
                        f" not {size!r}): upload it through the LFS batch API first, as"
                        " create_commit/preupload_lfs_files do."
                    )
                actual = store.blob_path(sha256).stat().st_size
                tree[path] = FileEntry.large(sha256, actual)
            case DeleteFile(path):
                if path not in tree:
                    raise HubEntryNotFoundError(
                        f"A file with this name doesn't exist: {path!r}. To delete a folder,"
                        " use delete_folder or a path ending with '/'."
                    )
                del tree[path]
            case DeleteFolder(folder):
                doomed = [p for p in tree if not folder or p.startswith(folder + "/")]
                if not doomed:
                    raise HubEntryNotFoundError(
                        f"A folder with this name doesn't exist: {folder!r}. List the repo with"
                        " list_repo_tree to see its folders."
                    )
                for path in doomed:
                    del tree[path]
    _check_no_file_folder_clash(tree)
    return tree


def _check_no_file_folder_clash(tree: Mapping[str, FileEntry]) -> None:
    for path in tree:
        parts = path.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            if prefix in tree:
                raise HubBadRequestError(
                    f"Path {path!r} needs a folder {prefix!r}, but {prefix!r} is a file in this"
                    " commit: delete or rename one of them."
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
        files = apply_operations(store, head.files, request.operations)
        commit = Commit.create(
            parents=(head.id,),
            files=files,
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

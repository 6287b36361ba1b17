"""Endpoints that read files: tree listings, paths-info, and ``resolve`` downloads with ranges.

``resolve`` answers HEAD and GET with the headers ``hf_hub_download`` relies on:
``X-Repo-Commit`` (the commit the revision resolved to), ``ETag`` (git blob id,
or sha256 for LFS files), and for LFS files ``X-Linked-Etag``/``X-Linked-Size``.
A ``Range: bytes=...`` request gets ``206`` with ``Content-Range``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response, StreamingResponse

from dagster_ds.hub.server._errors import HubBadRequestError, HubEntryNotFoundError
from dagster_ds.hub.server._http import Call, Route, error_response, route
from dagster_ds.hub.server._objects import Commit, FileEntry
from dagster_ds.hub.server._payload import boolean, json_object
from dagster_ds.hub.server._tree import add_last_commits, list_folder, paths_info

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
_READ_SIZE = 1 << 20


def tree(call: Call) -> Response:
    repo, _ = call.readable_repo()
    _, commit = call.store.resolve(repo, call.params["rev"])
    entries = list_folder(commit, call.params["path"].strip("/"), recursive=call.flag("recursive"))
    if call.flag("expand"):
        add_last_commits(call.store, repo, commit, entries)
    return JSONResponse(entries)


def _requested_paths(call: Call) -> tuple[list[str], bool]:
    content_type = call.request.headers.get("content-type", "")
    if "json" in content_type:
        data = json_object(call.body, "paths-info body")
        paths = data.get("paths", [])
        paths = [paths] if isinstance(paths, str) else paths
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise HubBadRequestError(
                f"paths-info: 'paths' must be a list of strings, got {paths!r:.100}."
            )
        return paths, boolean(data, "expand", "paths-info")
    form = parse_qs(call.body.decode("utf-8", errors="replace"), keep_blank_values=True)
    expand = form.get("expand", ["false"])[-1].lower() in ("1", "true")
    return form.get("paths", []), expand


def get_paths_info(call: Call) -> Response:
    repo, _ = call.readable_repo()
    _, commit = call.store.resolve(repo, call.params["rev"])
    paths, expand = _requested_paths(call)
    entries = paths_info(commit, paths)
    if expand:
        add_last_commits(call.store, repo, commit, entries)
    return JSONResponse(entries)


def _locate(call: Call) -> tuple[Commit, str, FileEntry]:
    repo, _ = call.readable_repo()
    _, commit = call.store.resolve(repo, call.params["rev"])
    path = call.params["path"]
    entry = commit.files.get(path)
    if entry is None:
        raise _EntryMissing(commit.id, path)
    return commit, path, entry


class _EntryMissing(HubEntryNotFoundError):
    def __init__(self, commit_id: str, path: str) -> None:
        self.commit_id = commit_id
        super().__init__(
            f"{path!r} is not a file at commit {commit_id!r}: list the repo with"
            " list_repo_tree to see its files."
        )


def _byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The inclusive (start, end) a ``Range`` header asks for; None for the whole file.

    Raises ValueError when the range cannot be satisfied.
    """
    if header is None:
        return None
    found = _RANGE.match(header.strip())
    if found is None:
        return None  # several ranges or another unit: answer with the whole file
    first, last = found.groups()
    if not first and not last:
        return None
    if not first:  # the last N bytes
        length = int(last)
        if length == 0 or size == 0:
            raise ValueError(header)
        return max(0, size - length), size - 1
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    if start >= size or start > end:
        raise ValueError(header)
    return start, end


def _read(path: Path, start: int, length: int) -> Iterator[bytes]:
    with open(path, "rb") as f:
        f.seek(start)
        while length > 0:
            chunk = f.read(min(_READ_SIZE, length))
            if not chunk:
                return
            length -= len(chunk)
            yield chunk


async def resolve(call: Call) -> Response:
    head = call.request.method == "HEAD"
    try:
        commit, _path, entry = await run_in_threadpool(_locate, call)
    except _EntryMissing as e:
        return error_response(e, {"X-Repo-Commit": e.commit_id}, head=head)
    headers = {
        "X-Repo-Commit": commit.id,
        "ETag": f'"{entry.etag}"',
        "Accept-Ranges": "bytes",
        "Content-Type": "application/octet-stream",
    }
    if entry.lfs:
        headers["X-Linked-Etag"] = f'"{entry.sha256}"'
        headers["X-Linked-Size"] = str(entry.size)
    try:
        wanted = _byte_range(call.request.headers.get("range"), entry.size)
    except ValueError:
        headers["Content-Range"] = f"bytes */{entry.size}"
        return Response(status_code=416, headers=headers)
    status = 200
    start, length = 0, entry.size
    if wanted is not None:
        status = 206
        start, length = wanted[0], wanted[1] - wanted[0] + 1
        headers["Content-Range"] = f"bytes {wanted[0]}-{wanted[1]}/{entry.size}"
    headers["Content-Length"] = str(length)
    if head:
        return Response(status_code=status, headers=headers)
    blob = call.store.blob_path(entry.sha256)
    return StreamingResponse(_read(blob, start, length), status_code=status, headers=headers)


ROUTES: list[Route] = [
    route("GET", "api/{types}/{namespace}/{name}/tree/{rev}/{path*}", tree),
    route(
        "POST",
        "api/{types}/{namespace}/{name}/paths-info/{rev}",
        get_paths_info,
        write=False,
        form=True,
    ),
    route("GET HEAD", "{types}/{namespace}/{name}/resolve/{rev}/{path*}", resolve),
    route("GET HEAD", "{namespace}/{name}/resolve/{rev}/{path*}", resolve),
]

"""Endpoints that write: preupload, the LFS batch API and its upload URLs, and commits.

The client's order for ``create_commit``/``upload_folder`` (Xet disabled) is:
``preupload`` (which files go through LFS), LFS ``batch`` (where to upload the
ones not stored yet), the uploads themselves plus ``verify``, and finally one
NDJSON ``commit`` that names LFS files by sha256 and carries regular files inline.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response

from dagster_ds.hub.server._commits import make_commit, parse_commit_payload, read_lines
from dagster_ds.hub.server._errors import HubBadRequestError
from dagster_ds.hub.server._http import Call, Route, logger, receive_body, route
from dagster_ds.hub.server._lfs import token_owner
from dagster_ds.hub.server._lfs_rules import upload_mode
from dagster_ds.hub.server._objects import RepoId, validate_path
from dagster_ds.hub.server._payload import integer, json_object, text
from dagster_ds.hub.server._repo_routes import json_body, repo_url

_LFS_JSON = "application/vnd.git-lfs+json"


def preupload(call: Call) -> Response:
    repo, _ = call.readable_repo()
    _, commit = call.store.resolve(repo, call.params["rev"])
    files = json_body(call).get("files")
    if not isinstance(files, list) or not files:
        raise HubBadRequestError(
            "preupload needs {'files': [{'path', 'sample', 'size'}, ...]}, as create_commit sends."
        )
    attributes_entry = commit.files.get(".gitattributes")
    gitattributes = (
        call.store.blob_path(attributes_entry.sha256).read_bytes() if attributes_entry else b""
    )
    answers: list[dict[str, Any]] = []
    for item in files:
        if not isinstance(item, dict):
            raise HubBadRequestError(f"preupload file entry {item!r} is not an object.")
        what = "preupload file entry"
        path = validate_path(text(item, "path", what, default="") or "")
        try:
            sample = base64.b64decode(text(item, "sample", what, default="") or "", validate=True)
        except (binascii.Error, ValueError) as e:
            raise HubBadRequestError(f"preupload sample of {path!r} is not base64.") from e
        mode = upload_mode(
            path=path,
            size=integer(item, "size", what, default=0) or 0,
            sample=sample,
            gitattributes=gitattributes,
            lfs_threshold=call.hub.settings.lfs_threshold,
        )
        existing = commit.files.get(path)
        oid = None if existing is None else existing.sha256 if existing.lfs else existing.oid
        answers.append({"path": path, "uploadMode": mode, "shouldIgnore": False, "oid": oid})
    return JSONResponse({"files": answers, "commitOid": commit.id})


_COMPLETION_LIMIT = 2 * 1024 * 1024  # 10,000 parts' ETags fit easily


async def commit(call: Call) -> Response:
    repo, _ = await run_in_threadpool(call.readable_repo)
    settings = call.hub.settings
    tmp = call.store.new_temp_path()
    try:
        await _receive(call, tmp, limit=settings.max_commit_body)
        return await run_in_threadpool(_commit_from_file, call, repo, tmp)
    finally:
        tmp.unlink(missing_ok=True)


def _commit_from_file(call: Call, repo: RepoId, payload: Path) -> Response:
    max_line = call.hub.settings.max_json_body
    lines = read_lines(payload, max_line)
    request = parse_commit_payload(lines, call.store, repo, max_line=max_line)
    result = make_commit(
        call.store,
        repo,
        revision=call.params["rev"],
        request=request,
        author=call.hub.settings.user,
        create_pr=call.flag("create_pr"),
    )
    logger.info(
        "%s: commit %s on %s (%d operations)",
        repo.describe(),
        result.commit.id,
        result.ref,
        len(request.operations),
    )
    url = repo_url(call, repo)
    pr_url = f"{url}/discussions/{result.pr_number}" if result.pr_number is not None else None
    return JSONResponse(
        {
            "success": True,
            "commitOid": result.commit.id,
            "commitUrl": f"{url}/commit/{result.commit.id}",
            "pullRequestUrl": pr_url,
            "hookOutput": "",
        }
    )


# -------------------------------------------------------------------- LFS


def _lfs_repo(call: Call) -> RepoId:
    name = call.params["name"]
    if not name.endswith(".git"):
        raise HubBadRequestError(f"LFS URLs name the repo as '<name>.git', got {name!r}.")
    call.params["name"] = name[: -len(".git")]
    repo, _ = call.readable_repo()
    return repo


def lfs_batch(call: Call) -> Response:
    repo = _lfs_repo(call)
    owner = token_owner(call.token)
    answer = call.hub.lfs.batch(json_body(call), call.base_url, repo, owner)
    return JSONResponse(answer, media_type=_LFS_JSON)


def lfs_verify(call: Call) -> Response:
    repo, _ = call.readable_repo()
    call.hub.lfs.verify(json_body(call), repo)
    return JSONResponse({"success": True})


async def _receive(call: Call, tmp: Path, *, limit: int) -> None:
    """Stream the body to ``tmp`` (at most ``limit`` bytes); removes ``tmp`` on failure."""
    try:
        with open(tmp, "wb") as f:
            await receive_body(
                call.request, limit=limit, timeout=call.hub.settings.body_timeout, sink=f.write
            )
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


async def lfs_upload_single(call: Call) -> Response:
    lfs = call.hub.lfs
    session = await run_in_threadpool(lfs.session, call.params["session"])
    if session.chunk_size is not None:
        raise HubBadRequestError(
            "This LFS upload is multipart: PUT each part to its own URL, then POST the ETags."
        )
    tmp = call.store.new_temp_path()
    await _receive(call, tmp, limit=session.size)
    try:
        await run_in_threadpool(lfs.complete_single, session, tmp)
    finally:
        tmp.unlink(missing_ok=True)
    return Response(status_code=200)


async def lfs_upload_part(call: Call) -> Response:
    lfs = call.hub.lfs
    session = await run_in_threadpool(lfs.session, call.params["session"])
    text_part = call.params["part"]
    if not text_part.isdigit() or len(text_part) > 6:
        raise HubBadRequestError(f"Part number {text_part[:20]!r} is not a positive integer.")
    part = int(text_part)
    tmp, size = lfs.part_file(session, part)
    await _receive(call, tmp, limit=size)
    try:
        etag = await run_in_threadpool(lfs.finish_part, session, part, tmp)
    finally:
        tmp.unlink(missing_ok=True)
    return Response(status_code=200, headers={"ETag": f'"{etag}"'})


async def lfs_complete_multipart(call: Call) -> Response:
    lfs = call.hub.lfs
    session = await run_in_threadpool(lfs.session, call.params["session"])
    body = await receive_body(
        call.request, limit=_COMPLETION_LIMIT, timeout=call.hub.settings.body_timeout
    )
    payload = json_object(body, "Multipart completion body")
    await run_in_threadpool(lfs.complete_multipart, session, payload)
    return JSONResponse({"success": True})


API = "api/{types}/{namespace}/{name}"
LFS = "info/lfs/objects"

ROUTES: list[Route] = [
    route("POST", f"{API}/preupload/{{rev}}", preupload),
    route("POST", f"{API}/commit/{{rev}}", commit, streaming=True),
    route("POST", f"{{types}}/{{namespace}}/{{name}}/{LFS}/batch", lfs_batch),
    route("POST", f"{{namespace}}/{{name}}/{LFS}/batch", lfs_batch),
    route("POST", "lfs-verify/{type}/{namespace}/{name}", lfs_verify),
    route("PUT", "lfs-uploads/{session}", lfs_upload_single, public=True, streaming=True),
    route("POST", "lfs-uploads/{session}", lfs_complete_multipart, public=True, streaming=True),
    route("PUT", "lfs-uploads/{session}/{part}", lfs_upload_part, public=True, streaming=True),
]

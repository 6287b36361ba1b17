"""HTTP plumbing of the local Hub: settings, tokens, routing on the raw path, error responses.

Routing works on the *raw* request path, split on ``/`` and decoded segment by
segment, because the client percent-encodes revisions as one segment
(``refs%2Fpr%2F1``) and a decoded path could not tell ``refs/pr/1`` from folders.
"""

from __future__ import annotations

import hmac
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from dagster_ds.hub.server._cards import CardCache
from dagster_ds.hub.server._errors import (
    HubBadRequestError,
    HubConflictError,
    HubEntryNotFoundError,
    HubNotFoundError,
    HubRepositoryNotFoundError,
    HubRevisionNotFoundError,
    HubStaleParentError,
    HubUnauthorizedError,
    LocalHubError,
)
from dagster_ds.hub.server._lfs import LfsUploads
from dagster_ds.hub.server._objects import RepoId
from dagster_ds.hub.server._store import HubStore

logger = logging.getLogger("dagster_ds.testing.hub")

_TYPE_SEGMENTS = {"models": "model", "datasets": "dataset", "spaces": "space"}
INVALID_CREDENTIALS = "Invalid credentials in Authorization header"


@dataclass(frozen=True)
class HubSettings:
    """How a local Hub behaves. ``token=None`` accepts any token, or none."""

    token: str | None = field(default=None, repr=False)
    user: str = "user"
    lfs_threshold: int = 10 * 1024 * 1024
    multipart_threshold: int = 64 * 1024 * 1024
    multipart_chunk_size: int = 16 * 1024 * 1024


@dataclass
class HubContext:
    """What every request handler shares: storage, LFS sessions, settings."""

    store: HubStore
    lfs: LfsUploads
    settings: HubSettings
    cards: CardCache = field(default_factory=CardCache)


@dataclass
class Call:
    """One request as a handler sees it."""

    request: Request
    params: dict[str, str]
    hub: HubContext
    authenticated: bool
    body: bytes = b""

    @property
    def base_url(self) -> str:
        """The URL the client reached this server at, without a trailing ``/``."""
        return str(self.request.base_url).rstrip("/")

    @property
    def store(self) -> HubStore:
        return self.hub.store

    def repo(self) -> RepoId:
        # Model URLs have no type segment (``/user/name.git/...``, ``/user/name/resolve``).
        repo_type = self.params.get("type", "model")
        return RepoId.parse(repo_type, self.params["namespace"], self.params["name"])

    def readable_repo(self) -> tuple[RepoId, dict[str, Any]]:
        """The addressed repo and its metadata; private repos need a token."""
        repo = self.repo()
        meta = self.store.repo_meta(repo)
        if meta.get("private") and not self.authenticated:
            raise HubRepositoryNotFoundError(
                f"The {repo.describe()} does not exist or is private: pass a token to see"
                " private repos."
            )
        return repo, meta

    def flag(self, name: str) -> bool:
        return self.request.query_params.get(name, "").lower() in ("1", "true", "yes")


Handler = Callable[[Call], Response | Awaitable[Response]]


@dataclass(frozen=True)
class Route:
    """An endpoint: methods, path pattern, handler.

    ``pattern`` tokens: literals, ``{name}`` (one segment), ``{types}`` (models,
    datasets, spaces), ``{rev}`` (a revision), ``{path*}`` (the rest, may be empty).
    """

    methods: frozenset[str]
    pattern: tuple[str, ...]
    handler: Handler
    public: bool = False  # reachable without the configured token (LFS presigned URLs)
    streaming: bool = False  # the handler reads the body itself


def route(methods: str, pattern: str, handler: Handler, **options: bool) -> Route:
    tokens = tuple(t for t in pattern.split("/") if t)
    return Route(frozenset(methods.split()), tokens, handler, **options)


def match(pattern: Sequence[str], segments: Sequence[str]) -> dict[str, str] | None:
    params: dict[str, str] = {}
    i = 0
    for token in pattern:
        if token == "{path*}":
            params["path"] = "/".join(segments[i:])
            return params
        if i >= len(segments):
            return None
        segment = segments[i]
        if token == "{types}":
            if segment not in _TYPE_SEGMENTS:
                return None
            params["type"] = _TYPE_SEGMENTS[segment]
        elif token == "{rev}":
            # An unencoded 'refs/pr/1' arrives as three segments.
            if segment == "refs" and len(segments) - i >= 3:
                params["rev"] = "/".join(segments[i : i + 3])
                i += 3
                continue
            params["rev"] = segment
        elif token.startswith("{") and token.endswith("}"):
            params[token[1:-1]] = segment
        elif token != segment:
            return None
        i += 1
    return params if i == len(segments) else None


def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def check_token(settings: HubSettings, token: str | None) -> None:
    """Raise unless ``token`` is acceptable. The token never appears in the message."""
    if settings.token is None:
        return
    if token is None or not hmac.compare_digest(token.encode(), settings.token.encode()):
        raise HubUnauthorizedError(
            f"{INVALID_CREDENTIALS}: this local Hub accepts only the token it was started"
            f" with, and the request had {'none' if token is None else 'another one'}. Pass"
            " token=... to HfApi/HfFileSystem or set HF_TOKEN."
        )


_STATUS: list[tuple[type[LocalHubError], int, str | None, str]] = [
    (HubUnauthorizedError, 401, None, INVALID_CREDENTIALS),
    (HubRepositoryNotFoundError, 404, "RepoNotFound", "Repository not found"),
    (HubRevisionNotFoundError, 404, "RevisionNotFound", "Invalid rev id"),
    (HubEntryNotFoundError, 404, "EntryNotFound", "Entry not found"),
    (HubNotFoundError, 404, None, "Not found"),
    (HubStaleParentError, 412, None, "A commit has happened since"),
    (HubConflictError, 409, None, "Conflict"),
    (HubBadRequestError, 400, None, "Bad request"),
]


def error_response(
    error: LocalHubError, headers: dict[str, str] | None = None, *, head: bool = False
) -> Response:
    """The Hub's answer to ``error``: status, ``X-Error-Code``, and ``{"error": message}``."""
    status, code, summary = 500, None, "Internal error"
    for cls, cls_status, cls_code, cls_summary in _STATUS:
        if isinstance(error, cls):
            status, code, summary = cls_status, cls_code, cls_summary
            break
    out = {"X-Error-Message": summary, **(headers or {})}
    if code is not None:
        out["X-Error-Code"] = code
    if head:
        return Response(status_code=status, headers=out)
    return JSONResponse({"error": str(error)}, status_code=status, headers=out)


async def dispatch(request: Request, hub: HubContext, routes: Sequence[Route]) -> Response:
    """Find the route for ``request``, check its token, run its handler, map errors."""
    raw = request.scope.get("raw_path") or request.scope["path"].encode()
    segments = [unquote(s) for s in raw.decode("latin-1").split("/") if s]
    method = request.method
    head = method == "HEAD"
    found_path = False
    for candidate in routes:
        params = match(candidate.pattern, segments)
        if params is None:
            continue
        found_path = True
        if method not in candidate.methods:
            continue
        try:
            token = bearer_token(request)
            if not candidate.public:
                check_token(hub.settings, token)
            call = Call(request, params, hub, authenticated=token is not None)
            if not candidate.streaming:
                call.body = await request.body()
            if inspect.iscoroutinefunction(candidate.handler):
                outcome = candidate.handler(call)
            else:
                outcome = await run_in_threadpool(candidate.handler, call)
            return await outcome if inspect.isawaitable(outcome) else outcome
        except LocalHubError as e:
            return error_response(e, head=head)
        except RecursionError:
            return error_response(
                HubBadRequestError("The request is nested too deeply to process."), head=head
            )
        except Exception as e:
            # A bug, not the client's fault: answer in the Hub's shape and keep the connection.
            logger.exception("Unexpected error in %s %s", method, request.url.path)
            return error_response(
                LocalHubError(f"Internal error ({type(e).__name__}); see the server log."),
                head=head,
            )
    if found_path:
        return JSONResponse({"error": f"Method {method} not allowed here"}, status_code=405)
    return JSONResponse(
        {"error": f"This local Hub has no endpoint {request.url.path!r}"}, status_code=404
    )

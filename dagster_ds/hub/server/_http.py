"""HTTP plumbing of the local Hub: settings, tokens, routing on the raw path, error responses.

Routing works on the *raw* request path, split on ``/`` and decoded segment by
segment, because the client percent-encodes revisions as one segment
(``refs%2Fpr%2F1``) and a decoded path could not tell ``refs/pr/1`` from folders.
"""

from __future__ import annotations

import asyncio
import hmac
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from dagster_ds.hub.server._cards import CardCache
from dagster_ds.hub.server._errors import (
    HubBadRequestError,
    HubConflictError,
    HubEntryNotFoundError,
    HubForbiddenError,
    HubNotFoundError,
    HubPayloadTooLargeError,
    HubRepositoryNotFoundError,
    HubRevisionNotFoundError,
    HubStaleParentError,
    HubTimeoutError,
    HubTooManyRequestsError,
    HubUnauthorizedError,
    HubUnsupportedMediaTypeError,
    LocalHubError,
)
from dagster_ds.hub.server._lfs import LfsUploads
from dagster_ds.hub.server._objects import RepoId
from dagster_ds.hub.server._settings import HubSettings
from dagster_ds.hub.server._store import HubStore

logger = logging.getLogger("dagster_ds.hub.server")

JSON_TYPES = frozenset(
    {"application/json", "application/x-ndjson", "application/vnd.git-lfs+json", ""}
)
FORM_TYPE = "application/x-www-form-urlencoded"
_TYPE_SEGMENTS = {"models": "model", "datasets": "dataset", "spaces": "space"}
INVALID_CREDENTIALS = "Invalid credentials in Authorization header"


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
    token: str | None = field(default=None, repr=False)
    body: bytes = b""

    @property
    def base_url(self) -> str:
        """This server's URL, from the socket the request came in on (never the Host header)."""
        server = self.request.scope.get("server")
        if not server or server[1] is None:
            return str(self.request.base_url).rstrip("/")
        host, port = server
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

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
    """An endpoint: methods, path pattern, handler, and who may call it.

    ``pattern`` tokens: literals, ``{name}`` (one segment), ``{types}`` (models,
    datasets, spaces), ``{rev}`` (a revision), ``{path*}`` (the rest, may be empty).
    """

    methods: frozenset[str]
    pattern: tuple[str, ...]
    handler: Handler
    public: bool = False  # reachable without the configured token (LFS presigned URLs)
    streaming: bool = False  # the handler reads the body itself (with `receive_body`)
    write: bool = False  # needs a token even in any-token mode
    form: bool = False  # also accepts an HTML form body (paths-info)


def route(methods: str, pattern: str, handler: Handler, **options: bool) -> Route:
    """A `Route`; a route with POST, PUT or DELETE is a write unless ``write=False``."""
    tokens = tuple(t for t in pattern.split("/") if t)
    method_set = frozenset(methods.split())
    options.setdefault("write", bool(method_set & {"POST", "PUT", "DELETE"}))
    return Route(method_set, tokens, handler, **options)


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


def check_token(settings: HubSettings, token: str | None, *, write: bool) -> None:
    """Raise unless ``token`` is acceptable. The token never appears in the message."""
    if settings.token is None:
        if token is None and write:
            raise HubUnauthorizedError(
                f"{INVALID_CREDENTIALS}: this request changes the Hub and needs a token; this"
                " local Hub accepts any token. Pass token=... or set HF_TOKEN."
            )
        return
    if token is None or not hmac.compare_digest(token.encode(), settings.token.encode()):
        raise HubUnauthorizedError(
            f"{INVALID_CREDENTIALS}: this local Hub accepts only the token it was started"
            f" with, and the request had {'none' if token is None else 'another one'}. Pass"
            " token=... to HfApi/HfFileSystem or set HF_TOKEN."
        )


def _host_name(value: str) -> str:
    """The host of a ``Host`` header or an origin URL, lower-case, without port or brackets."""
    if "://" in value:
        value = urlsplit(value).netloc
    value = value.rsplit("@", 1)[-1]
    if value.startswith("["):
        return value[1:].split("]", 1)[0].lower()
    return value.rsplit(":", 1)[0].lower() if value.count(":") == 1 else value.lower()


def check_browser_safety(request: Request, settings: HubSettings, route: Route) -> None:
    """Refuse DNS rebinding (a foreign ``Host``), cross-site writes and non-JSON bodies."""
    host = request.headers.get("host", "")
    if _host_name(host) not in settings.allowed_hosts:
        raise HubForbiddenError(
            f"Host {host[:100]!r} is not this local Hub's: use one of"
            f" {', '.join(settings.allowed_hosts)} (or start the server with that host allowed)."
        )
    if request.method in ("GET", "HEAD"):
        return
    origin = request.headers.get("origin")
    if origin is not None and (
        origin == "null" or _host_name(origin) not in settings.allowed_hosts
    ):
        raise HubForbiddenError(
            f"Requests from the web page {origin[:100]!r} may not change this local Hub."
        )
    if request.headers.get("sec-fetch-site", "") == "cross-site":
        raise HubForbiddenError("Cross-site requests may not change this local Hub.")
    if route.streaming and route.public:
        return  # LFS upload URLs: raw bytes
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type in JSON_TYPES or (route.form and content_type == FORM_TYPE):
        return
    raise HubUnsupportedMediaTypeError(
        f"Content type {content_type[:100]!r} is not accepted here: send application/json"
        " (application/x-ndjson for commits), as huggingface_hub does."
    )


async def receive_body(
    request: Request, *, limit: int, timeout: float, sink: Callable[[bytes], object] | None = None
) -> bytes:
    """Read the request body, at most ``limit`` bytes, each chunk within ``timeout`` seconds.

    With ``sink``, chunks go there (and ``b""`` is returned); otherwise they are
    joined. Stops reading as soon as the limit is exceeded.
    """
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise HubPayloadTooLargeError(
            f"The request body ({declared} bytes) is larger than this route accepts"
            f" ({limit} bytes)."
        )
    chunks: list[bytes] = []
    size = 0
    stream = request.stream().__aiter__()
    while True:
        try:
            chunk = await asyncio.wait_for(stream.__anext__(), timeout)
        except StopAsyncIteration:
            break
        except TimeoutError as e:
            raise HubTimeoutError(
                f"The request body did not arrive within {timeout} s: send it at once."
            ) from e
        except ClientDisconnect as e:
            raise HubBadRequestError("The client disconnected while sending the body.") from e
        size += len(chunk)
        if size > limit:
            raise HubPayloadTooLargeError(
                f"The request body is larger than this route accepts ({limit} bytes)."
            )
        if sink is None:
            chunks.append(chunk)
        else:
            sink(chunk)
    return b"".join(chunks)


_STATUS: list[tuple[type[LocalHubError], int, str | None, str]] = [
    (HubUnauthorizedError, 401, None, INVALID_CREDENTIALS),
    (HubForbiddenError, 403, None, "Forbidden"),
    (HubPayloadTooLargeError, 413, None, "Payload too large"),
    (HubUnsupportedMediaTypeError, 415, None, "Unsupported media type"),
    (HubTimeoutError, 408, None, "Request timeout"),
    (HubTooManyRequestsError, 429, None, "Too many requests"),
    (HubRepositoryNotFoundError, 404, "RepoNotFound", "Repository not found"),
    (HubRevisionNotFoundError, 404, "RevisionNotFound", "Invalid rev id"),
    (HubEntryNotFoundError, 404, "EntryNotFound", "Entry not found"),
    (HubNotFoundError, 404, None, "Not found"),
    (HubStaleParentError, 412, None, "A commit has happened since"),
    (HubConflictError, 409, None, "Conflict"),
    (HubBadRequestError, 400, None, "Bad request"),
]


def error_status(error: LocalHubError) -> int:
    """The HTTP status the Hub answers ``error`` with."""
    return next((status for cls, status, _, _ in _STATUS if isinstance(error, cls)), 500)


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
    if status in (408, 413):
        out["Connection"] = "close"  # the rest of the body is not read
    if code is not None:
        out["X-Error-Code"] = code
    if head:
        return Response(status_code=status, headers=out)
    return JSONResponse({"error": str(error)}, status_code=status, headers=out)


async def dispatch(request: Request, hub: HubContext, routes: Sequence[Route]) -> Response:
    """Find the route for ``request``, check host, origin and token, run its handler.

    The token is checked before any byte of the body is read; non-streaming
    routes get their body read up to ``max_json_body``.
    """
    raw = request.scope.get("raw_path") or request.scope["path"].encode()
    segments = [unquote(s) for s in raw.decode("latin-1").split("/") if s]
    method = request.method
    head = method == "HEAD"
    found_path = False
    settings = hub.settings
    for candidate in routes:
        params = match(candidate.pattern, segments)
        if params is None:
            continue
        found_path = True
        if method not in candidate.methods:
            continue
        try:
            check_browser_safety(request, settings, candidate)
            token = bearer_token(request)
            if not candidate.public:
                check_token(settings, token, write=candidate.write)
            call = Call(request, params, hub, authenticated=token is not None, token=token)
            if not candidate.streaming:
                call.body = await receive_body(
                    request, limit=settings.max_json_body, timeout=settings.body_timeout
                )
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
        return JSONResponse(
            {"error": f"Method {method} not allowed here"},
            status_code=405,
            headers={"X-Error-Message": "Method not allowed"},
        )
    return JSONResponse(
        {"error": f"This local Hub has no endpoint {request.url.path[:200]!r}"},
        status_code=404,
        headers={"X-Error-Message": "Not found"},
    )

"""The local Hub as an ASGI application (Starlette), independent of how it is served."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route as StarletteRoute

from dagster_ds.hub.server import _file_routes, _repo_routes, _upload_routes, _web
from dagster_ds.hub.server._errors import LocalHubStartError
from dagster_ds.hub.server._http import HubContext, Route, dispatch, logger
from dagster_ds.hub.server._lfs import LfsUploads
from dagster_ds.hub.server._settings import HubSettings
from dagster_ds.hub.server._store import HubStore

_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE"]


class _AnyPath(Convertor[str]):
    """Every path, control characters included.

    Starlette's ``path`` convertor (``.*``) stops at a decoded newline, and a
    request for ``/branch/a%0Ab`` would get Starlette's bare 404 instead of
    reaching `dispatch`, which answers what is wrong with the name.
    """

    regex = "(?s:.*)"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("dagster_ds_hub_path", _AnyPath())

# Order matters only where patterns overlap: API routes first, then resolve URLs, then pages.
ROUTES: list[Route] = [
    *_repo_routes.ROUTES,
    *_upload_routes.ROUTES,
    *_file_routes.ROUTES,
    *_web.ROUTES,
]


class Sweeper:
    """Removes crash leftovers (``tmp/``, expired uploads) at most every ``sweep_interval``.

    It runs in a worker thread, started by the first request after the interval,
    so a server that is left running keeps its data folder clean.
    """

    def __init__(self, hub: HubContext) -> None:
        self._hub = hub
        self._next = time.monotonic() + hub.settings.sweep_interval
        self._lock = threading.Lock()

    def maybe_start(self) -> None:
        now = time.monotonic()
        with self._lock:
            if now < self._next:
                return
            self._next = now + self._hub.settings.sweep_interval
        threading.Thread(target=self.sweep, name="dagster-ds-hub-sweep", daemon=True).start()

    def sweep(self) -> None:
        try:
            self._hub.store.sweep()
            self._hub.lfs.sweep()
        except OSError:
            logger.exception("Sweeping the local Hub's data folder failed")


def create_hub_app(
    data_dir: str | Path,
    *,
    token: str | None = None,
    user: str = "user",
    lfs_threshold: int = 10 * 1024 * 1024,
    multipart_threshold: int = 64 * 1024 * 1024,
    multipart_chunk_size: int = 16 * 1024 * 1024,
    **limits: Any,
) -> Starlette:
    """Build the ASGI app of a local Hub storing its data in ``data_dir``.

    Use it to serve the Hub with your own ASGI server; `LocalHubServer` is the
    ready-made way to run it.

    Args:
        data_dir: Folder of the store (created if missing; must be empty or a
            store this server made).
        token: The only token accepted; ``None`` accepts any token (writes and
            private reads still need one). An empty token is an error.
        user: The user name ``whoami`` returns, the default namespace and the
            author of commits.
        lfs_threshold: Files at least this large are uploaded through LFS.
        multipart_threshold: LFS files larger than this are uploaded in parts.
        multipart_chunk_size: Size of each part of a multipart upload.
        **limits: Other `HubSettings` fields: ``allowed_hosts`` (host names the
            ``Host`` and ``Origin`` headers may name), ``max_json_body``,
            ``max_commit_body``, ``max_lfs_file_size``, ``max_lfs_objects_per_batch``,
            ``max_lfs_parts``, ``max_upload_sessions`` (per token),
            ``upload_session_ttl`` and ``body_timeout`` (seconds).

    Returns:
        A Starlette application.

    Example:
        >>> import uvicorn  # doctest: +SKIP
        >>> uvicorn.run(create_hub_app("/tmp/hub"), port=8000)  # doctest: +SKIP
    """
    settings = HubSettings(
        token=token,
        user=user,
        lfs_threshold=lfs_threshold,
        multipart_threshold=multipart_threshold,
        multipart_chunk_size=multipart_chunk_size,
        **limits,
    )
    if token is not None and not token.strip():
        raise LocalHubStartError(
            "The local Hub token is empty: pass a real token, or None for any-token mode."
        )
    store = HubStore(Path(data_dir), stale_after=settings.stale_after)
    lfs = LfsUploads(store, settings)
    hub = HubContext(store=store, lfs=lfs, settings=settings)
    sweeper = Sweeper(hub)

    async def endpoint(request: Request) -> Response:
        sweeper.maybe_start()
        return await dispatch(request, hub, ROUTES)

    return Starlette(
        routes=[StarletteRoute("/{path:dagster_ds_hub_path}", endpoint, methods=_METHODS)]
    )

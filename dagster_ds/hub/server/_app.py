"""The local Hub as an ASGI application (Starlette), independent of how it is served."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route as StarletteRoute

from dagster_ds.hub.server import _file_routes, _repo_routes, _upload_routes
from dagster_ds.hub.server._http import HubContext, HubSettings, Route, dispatch
from dagster_ds.hub.server._lfs import LfsUploads
from dagster_ds.hub.server._store import HubStore

_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE"]

# Order matters only where patterns overlap: API routes first, resolve URLs last.
ROUTES: list[Route] = [*_repo_routes.ROUTES, *_upload_routes.ROUTES, *_file_routes.ROUTES]


def create_hub_app(
    data_dir: str | Path,
    *,
    token: str | None = None,
    user: str = "user",
    lfs_threshold: int = 10 * 1024 * 1024,
    multipart_threshold: int = 64 * 1024 * 1024,
    multipart_chunk_size: int = 16 * 1024 * 1024,
) -> Starlette:
    """Build the ASGI app of a local Hub storing its data in ``data_dir``.

    Use it to serve the Hub with your own ASGI server; `LocalHubServer` is the
    ready-made way to run it.

    Args:
        data_dir: Folder of the store (created if missing; must be empty or a
            store this server made).
        token: The only token accepted; ``None`` accepts any token, or none.
        user: The user name ``whoami`` returns, the default namespace and the
            author of commits.
        lfs_threshold: Files at least this large are uploaded through LFS.
        multipart_threshold: LFS files larger than this are uploaded in parts.
        multipart_chunk_size: Size of each part of a multipart upload.

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
    )
    store = HubStore(Path(data_dir))
    lfs = LfsUploads(
        store, multipart_threshold=multipart_threshold, chunk_size=multipart_chunk_size
    )
    hub = HubContext(store=store, lfs=lfs, settings=settings)

    async def endpoint(request: Request) -> Response:
        return await dispatch(request, hub, ROUTES)

    return Starlette(routes=[StarletteRoute("/{path:path}", endpoint, methods=_METHODS)])

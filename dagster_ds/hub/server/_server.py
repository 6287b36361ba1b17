"""`LocalHubServer`: the local Hub served by uvicorn in a background thread."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import uvicorn
from filelock import FileLock

from dagster_ds.hub.server._app import create_hub_app
from dagster_ds.hub.server._errors import LocalHubStartError
from dagster_ds.hub.server._settings import LOOPBACK_HOSTS

logger = logging.getLogger("dagster_ds.hub.server")


class _Server(uvicorn.Server):
    """uvicorn's server, whose shutdown also aborts the connections it leaves open.

    uvicorn's shutdown ends idle connections and waits a while for the others; one
    whose client stopped reading a response is still sending then, and outlived the
    event loop: its socket stayed open until garbage collection (a ResourceWarning in
    whatever ran then). Its unsent bytes are dropped, as the server is stopping.
    """

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await super().shutdown(sockets=sockets)
        for connection in list(self.server_state.connections):
            transport = getattr(connection, "transport", None)
            if isinstance(transport, asyncio.WriteTransport):
                transport.abort()
        await asyncio.sleep(0)  # the aborts close their sockets on the loop's next turn


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _recorded_port(data_dir: Path, host: str) -> int:
    """The port recorded in the store ``data_dir`` (``port.json``); picked and recorded once."""
    record = data_dir / "port.json"
    (data_dir / "locks").mkdir(exist_ok=True)
    with FileLock(str(data_dir / "locks" / "port.lock")):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            port = int(json.loads(record.read_text())["port"])
            if 0 < port < 65536:
                return port
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((host, 0))
            port = probe.getsockname()[1]
        staging = data_dir / "tmp" / f"port-{os.getpid()}.json"
        staging.write_text(json.dumps({"port": port}))
        os.replace(staging, record)
        return port


class LocalHubServer:
    """A local server speaking the Hugging Face Hub HTTP API, for tests and offline pipelines.

    Point ``huggingface_hub`` at `endpoint` (``HfApi(endpoint=...)``,
    ``HfFileSystem(endpoint=...)`` or ``HF_ENDPOINT`` set before importing it) with
    Xet disabled (``HF_HUB_DISABLE_XET=1``): repositories, branches, pull-request
    refs, commits, LFS uploads (single-part and multipart), tree listings and
    downloads with ranges behave as on the Hub, and ``datasets.load_dataset``
    reads what was pushed. Data is kept in ``data_dir`` and survives restarts.

    The server runs in a daemon thread of this process, on a free loopback port
    unless ``port`` is given. With ``token`` set, every request must carry exactly
    that token (others get HTTP 401); without one, any token is accepted, but
    writes and reads of private repositories still need *a* token. The token is
    never logged or echoed. Bodies, LFS batches and cards are bounded (see
    `create_hub_app`), and browsers from other sites cannot drive it.

    ``huggingface_hub`` builds its user agent with a registry it fetches from its
    *default* endpoint (huggingface.co unless ``HF_ENDPOINT`` was set before the
    import), whatever endpoint a client is given: set ``HF_HUB_DISABLE_TELEMETRY=1``
    to keep everything local (`client_env` does, for subprocesses).
    ``datasets.load_dataset`` also asks a "datasets-server" host for exported
    Parquet files; set ``datasets.config.USE_PARQUET_EXPORT = False`` so it does
    not try to reach one.

    Args:
        data_dir: Where repositories, commits and blobs are stored. ``None`` uses
            a temporary folder removed by `stop`.
        port: TCP port; 0 picks a free one.
        host: Interface to listen on (loopback by default).
        token: The only accepted token; ``None`` accepts any token (writes and
            private reads still need one). An empty token is an error.
        user: Name returned by ``whoami``, default namespace and commit author.
        lfs_threshold: Files at least this large go through LFS (besides the
            ``.gitattributes`` rules, e.g. ``*.parquet``, and binary files).
        multipart_threshold: LFS files larger than this are uploaded in parts.
        multipart_chunk_size: Size of each part.
        access_log: Log one line per request (method, path, status; no headers).
        stable_port: Listen on the port recorded in ``data_dir`` (``port.json``,
            picked on first use), so the store's web links keep one address. If
            another server holds it (a step running in parallel), a free port is
            used and `stable_endpoint` still names the recorded one.
        **limits: The limits of `create_hub_app` (body sizes, LFS caps, timeouts).

    Raises:
        LocalHubStartError: ``token`` is empty, or ``host`` is not a loopback
            address and no token is set.

    Example:
        >>> from huggingface_hub import HfApi
        >>> with LocalHubServer() as hub:
        ...     api = HfApi(endpoint=hub.endpoint, token="anything")
        ...     url = api.create_repo("user/demo", repo_type="dataset")
        ...     api.dataset_info("user/demo").id
        'user/demo'
    """

    def __init__(
        self,
        data_dir: str | Path | None = None,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        token: str | None = None,
        user: str = "user",
        lfs_threshold: int = 10 * 1024 * 1024,
        multipart_threshold: int = 64 * 1024 * 1024,
        multipart_chunk_size: int = 16 * 1024 * 1024,
        access_log: bool = False,
        stable_port: bool = False,
        **limits: Any,
    ) -> None:
        if token is not None and not token.strip():
            raise LocalHubStartError(
                "The local Hub token is empty: pass a real token, or token=None for any-token"
                " mode (which still needs *a* token for writes and private reads)."
            )
        if not _is_loopback(host) and token is None:
            raise LocalHubStartError(
                f"Listening on {host!r} exposes the local Hub beyond this machine: set a token"
                " (token=... or $DAGSTER_DS_HUB_TOKEN), or listen on 127.0.0.1."
            )
        self._owns_data_dir = data_dir is None
        self._data_dir = Path(data_dir) if data_dir is not None else None
        self._requested_port = port
        self.host = host
        self._token = token
        self._options = {
            "user": user,
            "lfs_threshold": lfs_threshold,
            "multipart_threshold": multipart_threshold,
            "multipart_chunk_size": multipart_chunk_size,
            **limits,
        }
        self._access_log = access_log
        self._stable_port = stable_port
        self._recorded_port: int | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    def __repr__(self) -> str:
        state = f"endpoint={self.endpoint!r}" if self.running else "stopped"
        token = "one token" if self._token is not None else "any token"
        return f"LocalHubServer({state}, data_dir={str(self._data_dir)!r}, accepts {token})"

    @property
    def token(self) -> str | None:
        """The token the server requires, or None if it accepts any."""
        return self._token

    @property
    def running(self) -> bool:
        """Whether the server is listening."""
        return self._server is not None and self._server.started

    @property
    def data_dir(self) -> Path:
        """The folder holding the server's data (known once started if it was temporary)."""
        if self._data_dir is None:
            raise LocalHubStartError(
                "This LocalHubServer uses a temporary data folder that exists only once it is"
                " started: call start() first, or pass data_dir=."
            )
        return self._data_dir

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        if self._socket is None:
            raise LocalHubStartError(
                "This LocalHubServer is not started, so it has no port yet: call start() or"
                " use it as a context manager."
            )
        return self._socket.getsockname()[1]

    @property
    def endpoint(self) -> str:
        """The base URL to give ``huggingface_hub`` (``http://127.0.0.1:<port>``)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def stable_endpoint(self) -> str:
        """The store's lasting address: its recorded port with ``stable_port``, else `endpoint`."""
        if self._recorded_port is None:
            return self.endpoint
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self._recorded_port}"

    @property
    def client_env(self) -> dict[str, str]:
        """Environment variables that point a new process's ``huggingface_hub`` here.

        ``HF_ENDPOINT``, ``HF_HUB_DISABLE_XET=1`` and ``HF_HUB_DISABLE_TELEMETRY=1``;
        add ``HF_TOKEN`` yourself if the server requires a token.

        Example:
            >>> env = {**os.environ, **hub.client_env}  # doctest: +SKIP
            >>> subprocess.run([sys.executable, "push.py"], env=env)  # doctest: +SKIP
        """
        return {
            "HF_ENDPOINT": self.endpoint,
            "HF_HUB_DISABLE_XET": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
        }

    def start(self, timeout: float = 10.0) -> Self:
        """Start listening; returns once the server accepts connections.

        Raises:
            LocalHubStartError: The port is taken or the server did not start in time.
        """
        if self._server is not None:
            return self
        if self._data_dir is None:
            self._data_dir = Path(tempfile.mkdtemp(prefix="dagster-ds-hub-"))
        if not _is_loopback(self.host):
            logger.warning(
                "The local Hub listens on %r: it is reachable from other machines. Use it on"
                " trusted networks only; every request needs the token.",
                self.host,
            )
        options = dict(self._options)
        hosts = options.pop("allowed_hosts", LOOPBACK_HOSTS)
        if self.host not in hosts and self.host not in ("0.0.0.0", "::"):
            hosts = (*hosts, self.host)
        app = create_hub_app(
            self._data_dir, token=self._token, allowed_hosts=tuple(hosts), **options
        )
        if self._stable_port:
            self._recorded_port = _recorded_port(self._data_dir, self.host)
            try:
                sock = self._listen(self._recorded_port)
            except LocalHubStartError:
                sock = self._listen(0)  # another server of this store holds it
        else:
            sock = self._listen(self._requested_port)
        config = uvicorn.Config(
            app,
            log_config=None,
            access_log=self._access_log,
            lifespan="off",
            ws="none",
            http="h11",
            loop="asyncio",
            server_header=False,
            timeout_graceful_shutdown=2,
            timeout_keep_alive=30,
            limit_concurrency=512,
        )
        server = _Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="dagster-ds-local-hub", daemon=True
        )
        self._server, self._thread, self._socket = server, thread, sock
        thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise LocalHubStartError(
                    f"The local Hub did not start within {timeout}s on {self.host!r}; see the"
                    " 'uvicorn.error' log for why, or raise timeout=."
                )
            time.sleep(0.005)
        return self

    def _listen(self, port: int) -> socket.socket:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # proto=IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are
        # TCP, and without it every response on a kept-alive connection waits 40 ms (Nagle).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, port))
            sock.listen(128)
        except OSError as e:
            sock.close()
            raise LocalHubStartError(
                f"Cannot listen on {self.host!r} port {port!r}: {e}. Pick another port, or"
                " port=0 for a free one."
            ) from e
        return sock

    def stop(self) -> None:
        """Stop the server and wait for it; removes the data folder if it was temporary."""
        server, thread, sock = self._server, self._thread, self._socket
        self._server = self._thread = self._socket = None
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout=10)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()
        if self._owns_data_dir and self._data_dir is not None:
            shutil.rmtree(self._data_dir, ignore_errors=True)
            self._data_dir = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

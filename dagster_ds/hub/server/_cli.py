"""``dagster-ds hub``: run the local Hub server from the command line."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path

import click

from dagster_ds.hub.server._errors import LocalHubError
from dagster_ds.hub.server._server import LocalHubServer


@click.group(name="hub")
def hub_group() -> None:
    """Run a local server speaking the Hugging Face Hub API."""


@hub_group.command(name="serve")
@click.option(
    "--port", type=int, default=0, show_default=True, help="TCP port; 0 picks a free one."
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option(
    "--data-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder holding repositories, commits and blobs (created if missing).",
)
@click.option(
    "--token",
    envvar="DAGSTER_DS_HUB_TOKEN",
    default=None,
    help="Accept only this token (safer through $DAGSTER_DS_HUB_TOKEN). Default: any token.",
)
@click.option("--user", default="user", show_default=True, help="User name whoami returns.")
def serve_command(port: int, host: str, data_dir: Path, token: str | None, user: str) -> None:
    """Serve the local Hub until interrupted (Ctrl+C or SIGTERM).

    Point huggingface_hub at it with HF_ENDPOINT=<printed URL>, HF_HUB_DISABLE_XET=1
    and HF_HUB_DISABLE_TELEMETRY=1.
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    server = LocalHubServer(data_dir, port=port, host=host, token=token, user=user, access_log=True)
    try:
        server.start()
    except LocalHubError as e:
        raise click.ClickException(str(e)) from e
    try:
        mode = "one token (from --token)" if token is not None else "any token"
        click.echo(f"Local Hub serving {str(server.data_dir)!r}, accepting {mode}.")
        click.echo(f"HF_ENDPOINT={server.endpoint}", nl=True)
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
        click.echo("Local Hub stopped.")

"""``dagster-ds hub``: run the local Hub server from the command line."""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

import click

from dagster_ds.hub.server import LOOPBACK_HOSTS, LocalHubError, LocalHubServer


@click.group(name="hub")
def hub_group() -> None:
    """Run a local server speaking the Hugging Face Hub API."""


@hub_group.command(name="serve")
@click.option(
    "--port", type=int, default=0, show_default=True, help="TCP port; 0 picks a free one."
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to listen on. Anything but loopback needs a token.",
)
@click.option(
    "--data-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder holding repositories, commits and blobs (created if missing).",
)
@click.option(
    "--token",
    default=None,
    help="Accept only this token. Prefer $DAGSTER_DS_HUB_TOKEN: a --token shows in the"
    " process list. Default: any token (but writes and private reads still need one).",
)
@click.option(
    "--allow-host",
    "allowed_hosts",
    multiple=True,
    help="Another host name clients use in URLs (checked against Host and Origin headers).",
)
@click.option(
    "--stable-port",
    is_flag=True,
    help="Listen on the port recorded in the data folder (the one the embedded Hub of a"
    " Dagster instance uses), so recorded Hub links open. Overrides --port.",
)
@click.option("--user", default="user", show_default=True, help="User name whoami returns.")
def serve_command(
    port: int,
    host: str,
    data_dir: Path,
    token: str | None,
    allowed_hosts: tuple[str, ...],
    stable_port: bool,
    user: str,
) -> None:
    """Serve the local Hub until interrupted (Ctrl+C or SIGTERM).

    Point huggingface_hub at it with HF_ENDPOINT=<printed URL>, HF_HUB_DISABLE_XET=1
    and HF_HUB_DISABLE_TELEMETRY=1.
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    source = "--token"
    if token is not None:
        click.echo(
            "Warning: --token is visible to every user of this machine in the process list;"
            " set $DAGSTER_DS_HUB_TOKEN instead.",
            err=True,
        )
    elif "DAGSTER_DS_HUB_TOKEN" in os.environ:
        token, source = os.environ["DAGSTER_DS_HUB_TOKEN"], "$DAGSTER_DS_HUB_TOKEN"
    if token is not None and not token.strip():
        raise click.ClickException(
            f"The token from {source} is empty: set a real token, or unset it for any-token mode."
        )
    # A flag, not a threading.Event: the handler runs in the main thread, possibly
    # while it holds the Event's own lock inside wait(), and set() would then
    # deadlock (the server never stopped on SIGTERM).
    stopping: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda number, _frame: stopping.append(number))
    options: dict[str, Any] = {}
    if allowed_hosts:
        options["allowed_hosts"] = (*LOOPBACK_HOSTS, *allowed_hosts)
    try:
        server = LocalHubServer(
            data_dir,
            port=port,
            host=host,
            token=token,
            user=user,
            access_log=True,
            stable_port=stable_port,
            **options,
        )
        server.start()
    except LocalHubError as e:
        raise click.ClickException(str(e)) from e
    try:
        mode = f"one token (from {source})" if token is not None else "any token"
        click.echo(f"Local Hub serving {str(server.data_dir)!r}, accepting {mode}.")
        if host not in LOOPBACK_HOSTS:
            click.echo(f"Warning: listening on {host!r}, reachable from other machines.", err=True)
        if server.stable_endpoint != server.endpoint:
            click.echo(
                f"Warning: the recorded port is taken; links to {server.stable_endpoint} will"
                " not open while this server runs instead.",
                err=True,
            )
        click.echo(f"HF_ENDPOINT={server.endpoint}", nl=True)
        while not stopping:
            time.sleep(0.2)
    finally:
        server.stop()
        click.echo("Local Hub stopped.")

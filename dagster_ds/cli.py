"""The ``dagster-ds`` command line.

Each package contributes one command group from its own ``_cli.py`` module;
this module only assembles them.

Example:
    $ dagster-ds hash explain old.json new.json
    $ dagster-ds cache gc --max-size 20GB
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from dagster_ds.cache._cli import cache_group
from dagster_ds.fingerprint import HashNode, explain
from dagster_ds.testing._cli import hub_group


@click.group()
@click.version_option(package_name="dagster-ds")
def main() -> None:
    """Fingerprinted, cached datasets-style transforms for Dagster."""


main.add_command(cache_group)


@main.group(name="hash")
def hash_group() -> None:
    """Inspect fingerprints."""


@hash_group.command(name="explain")
@click.argument("old", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("new", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def explain_command(old: Path, new: Path) -> None:
    """Say which components differ between two recorded hash trees (JSON files)."""
    trees = [HashNode.from_dict(json.loads(path.read_text())) for path in (old, new)]
    click.echo(str(explain(*trees)))


main.add_command(hub_group)

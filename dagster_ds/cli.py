"""The ``dagster-ds`` command line.

Each package contributes one command group from its own ``_cli.py`` module;
this module only assembles them.

Example:
    $ dagster-ds hash explain 5f0c...e1 9a2b...07
    $ dagster-ds cache gc --max-size 20GB
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from dagster_ds.cache import CacheStore
from dagster_ds.cache._cli import cache_group
from dagster_ds.fingerprint import HashNode, explain
from dagster_ds.hub.server._cli import hub_group


@click.group()
@click.version_option(package_name="dagster-ds")
def main() -> None:
    """Fingerprinted, cached datasets-style transforms for Dagster."""


main.add_command(cache_group)


@main.group(name="hash")
def hash_group() -> None:
    """Inspect fingerprints."""


@hash_group.command(name="explain")
@click.argument("old")
@click.argument("new")
@click.option("--dir", "root", default=None, help="Cache location (default: $DAGSTER_DS_CACHE).")
def explain_command(old: str, new: str, root: str | None) -> None:
    """Say why two results differ: which code, global, closure cell or argument changed.

    OLD and NEW are fingerprints of cached results (their manifests keep the
    hash tree of the transform that made them) or JSON files of hash trees.
    """
    click.echo(str(explain(_tree(old, root), _tree(new, root))))


def _tree(reference: str, root: str | None) -> HashNode:
    path = Path(reference)
    if path.is_file():
        return HashNode.from_dict(json.loads(path.read_text()))
    entry = CacheStore(root).lookup(reference)
    if entry is None:
        raise click.BadParameter(
            f"{reference!r} is neither a JSON file nor the fingerprint of a cached result; "
            "list cached fingerprints with 'dagster-ds cache ls'."
        )
    with entry:
        tree = entry.metadata.get("hash_tree")
    if not isinstance(tree, dict):
        raise click.BadParameter(
            f"the cache entry {reference!r} records no hash tree (a random fingerprint)."
        )
    return HashNode.from_dict(tree)


main.add_command(hub_group)

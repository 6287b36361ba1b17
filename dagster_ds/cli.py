"""The ``dagster-ds`` command line.

Each package contributes one command group from its own ``_cli.py`` module;
this module only assembles them.

Example:
    $ dagster-ds hash explain 5f0c...e1 9a2b...07
    $ dagster-ds cache gc --max-size 20GB
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from dagster_ds.cache import CacheStore
from dagster_ds.cache._cli import Duration, Size, cache_group, cache_store
from dagster_ds.cache._units import format_size
from dagster_ds.fingerprint import HashNode, explain
from dagster_ds.hub.server._cli import hub_group


@click.group()
@click.version_option(package_name="dagster-ds")
def main() -> None:
    """Fingerprinted, cached datasets-style transforms for Dagster."""


main.add_command(cache_group)


@cache_group.command(name="gc")
@click.option(
    "--max-size",
    type=Size(),
    default=None,
    help="Evict least-recently-used entries until the cache is this small, e.g. 20GB.",
)
@click.option(
    "--keep-versions",
    type=click.IntRange(min=1),
    default=None,
    help="Keep this many stored versions of each dataset asset; older ones go, with the "
    "entries only they used.",
)
@click.option(
    "--grace",
    type=Duration(),
    default="1h",
    show_default=True,
    help="Keep tmp/ and quarantine/ items younger than this.",
)
@click.pass_context
def gc_command(
    ctx: click.Context, max_size: int | None, keep_versions: int | None, grace: float
) -> None:
    """Evict least-recently-used entries and old asset versions, never those in use.

    Kept asset versions (the newest of each asset without --keep-versions) and
    the entries they reference are never evicted by --max-size. With
    $DAGSTER_HOME set, the version each asset's latest materialization records
    is kept too.
    """
    from dagster_ds.arrow._stored import all_versions, kept_entries, retain

    if max_size is None and keep_versions is None:
        raise click.UsageError("Give --max-size, --keep-versions, or both.")
    store = cache_store(ctx)
    pinned = _pinned_versions(store)
    if keep_versions is not None:
        retention = retain(store, keep_versions, pinned=pinned)
        click.echo(
            f"removed {len(retention.removed_versions)} old versions and "
            f"{len(retention.removed_entries)} entries only they used; "
            f"{len(retention.kept_versions)} versions kept"
        )
        pinned |= set(retention.kept_versions)
    else:
        newest: dict[str, str] = {}
        for record in all_versions(store):
            newest.setdefault(str(record.get("asset")), str(record["key"]))
        pinned |= set(newest.values())
    if max_size is None:
        return
    report = store.gc(max_size, grace=grace, keep=kept_entries(store, pinned))
    for key in report.evicted:
        click.echo(f"evicted {key}")
    for key in report.in_use:
        click.echo(f"kept {key} (in use)")
    click.echo(
        f"freed {format_size(report.freed_bytes)} ({len(report.evicted)} entries, "
        f"{len(report.removed_garbage)} garbage items); "
        f"{format_size(report.total_bytes)} left"
    )


def _pinned_versions(store: CacheStore) -> set[str]:
    """The versions the Dagster instance at $DAGSTER_HOME records as latest, if any."""
    if not os.environ.get("DAGSTER_HOME"):
        return set()
    import dagster as dg

    from dagster_ds.orchestration.io_manager import DatasetStore, pinned_versions

    with dg.DagsterInstance.get() as instance:
        return pinned_versions(instance, DatasetStore(store.root))


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
    hash tree of the transform that made them), of dataset asset versions
    (their recipe or data version), or JSON files of hash trees. For asset
    versions the changes are said as the run log says them
    (``global 'MIN_WORDS': 8 → 10``, ``config 'factor': 1 → 2``).
    """
    before, after = _tree(old, root), _tree(new, root)
    if before.kind == after.kind == "dataset_asset":
        from dagster_ds.orchestration._changes import explain_differences

        click.echo(f"{after.label}: {before.digest} → {after.digest}")
        for line in explain_differences(before, after):
            click.echo(f"  - {line}")
        return
    click.echo(str(explain(before, after)))


def _tree(reference: str, root: str | None) -> HashNode:
    path = Path(reference)
    if path.is_file():
        return HashNode.from_dict(json.loads(path.read_text()))
    metadata = _resolve(reference, root)
    tree = metadata.get("hash_tree")
    if not isinstance(tree, dict):
        raise click.BadParameter(
            f"the stored result {reference!r} records no hash tree (a random fingerprint)."
        )
    return HashNode.from_dict(tree)


def _resolve(reference: str, root: str | None) -> dict[str, Any]:
    """The metadata of the one stored result ``reference`` names (or starts) in the store.

    A result is named by its key, or, for an asset version, by its recipe
    fingerprint or content fingerprint (the data version the UI shows).
    """
    wanted = reference.strip().lower()
    if len(wanted) < 6:
        raise click.BadParameter(f"{reference!r}: give at least 6 characters of a fingerprint.")
    found: dict[str, dict[str, Any]] = {}
    for info in CacheStore(root).ls():
        names = [
            info.fingerprint,
            info.metadata.get("fingerprint"),
            info.metadata.get("content_fingerprint"),
        ]
        if any(isinstance(name, str) and name.startswith(wanted) for name in names):
            found[info.fingerprint] = dict(info.metadata)
    if not found:
        raise click.BadParameter(
            f"{reference!r} is neither a JSON file nor (the start of) the fingerprint of a stored "
            "result or asset version; list them with 'dagster-ds cache ls'."
        )
    if len(found) > 1:
        raise click.BadParameter(
            f"{reference!r} starts {len(found)} stored results ({', '.join(sorted(found)[:5])}...);"
            " give more characters."
        )
    return next(iter(found.values()))


@main.command(name="export")
@click.argument("asset")
@click.argument("path")
@click.option(
    "--fingerprint",
    default=None,
    help="The version (its recipe or content fingerprint, or a unique start); default: newest.",
)
@click.option("--store", "root", default=None, help="The store (default: $DAGSTER_DS_CACHE).")
def export_command(asset: str, path: str, fingerprint: str | None, root: str | None) -> None:
    """Write a stored asset version in save_to_disk layout, for datasets.load_from_disk.

    ASSET is the asset key ("a/b" for a prefixed key); PATH a folder or fsspec URL.
    """
    import dagster as dg

    from dagster_ds.orchestration import DatasetStore

    store = DatasetStore(root)
    key = dg.AssetKey.from_user_string(asset)
    versions = store.versions(key)
    if fingerprint is not None:
        wanted = fingerprint.lower()
        versions = [
            record
            for record in versions
            if str(record.get("fingerprint", "")).startswith(wanted)
            or str(record.get("content_fingerprint", "")).startswith(wanted)
        ]
    if not versions:
        raise click.ClickException(
            f"No stored version of asset {asset!r}"
            + (f" matches {fingerprint!r}" if fingerprint else "")
            + f" in {store.root!r}; materialize it, or check --store."
        )
    if fingerprint is not None and len({str(r["fingerprint"]) for r in versions}) > 1:
        raise click.ClickException(
            f"{fingerprint!r} starts several versions of {asset!r}; give more characters."
        )
    chosen = str(versions[0]["fingerprint"])
    store.export(key, chosen, path)
    click.echo(f"Exported {asset} ({chosen}) to {path}")


main.add_command(hub_group)

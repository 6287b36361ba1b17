"""The ``dagster-ds`` command line.

The command groups live beside this module (``_cache.py``, ``_hub.py``) and
call the packages' interfaces; this module assembles them, and finds the
store for every command as the assets do: ``--store``; else, with
``$DAGSTER_HOME`` set, the store the assets' materializations record (or the
instance's default store); else the dataset cache. Each command says which
store it uses, and why, on stderr.

Example:
    $ dagster-ds hash explain 5f0c22a9… 9a2b41c7…
    $ dagster-ds cache gc --keep-versions 2 --store s3://bucket/datasets
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from dagster_ds.cache import CacheStore, format_size
from dagster_ds.cli._cache import (
    Duration,
    Fingerprint,
    Size,
    StoreChoice,
    StoreOptions,
    cache_group,
    default_store,
    fingerprint_prefix,
    store_option,
    use_store,
    warn_nothing_found,
)
from dagster_ds.cli._diff import diff_command
from dagster_ds.cli._hub import hub_group
from dagster_ds.cli._plan import plan_command
from dagster_ds.cli._promote import promote_command
from dagster_ds.cli._rollback import rollback_command
from dagster_ds.fingerprint import HashNode, explain


@click.group()
@click.version_option(package_name="dagster-ds")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Fingerprinted, cached datasets-style transforms for Dagster."""
    ctx.obj = StoreOptions(finder=_find_store)


def _find_store(asset: str | None = None) -> StoreChoice:
    """The store when no option names one: where the assets are, as the instance records.

    With ``$DAGSTER_HOME`` set: the store the latest materializations of
    ``asset`` (of every asset when None) record, else the instance's default
    store. Without it: the dataset cache.
    """
    home = os.environ.get("DAGSTER_HOME", "").strip()
    if not home:
        return default_store(asset)
    if not os.path.isdir(home):
        raise click.UsageError(
            f"$DAGSTER_HOME is {home!r}, which is not a folder: set it to your Dagster"
            " instance's folder, unset it, or give the store with --store."
        )
    from dagster_ds.orchestration import instance_stores

    stores = instance_stores(asset)
    if len(stores.recorded) > 1:
        listing = "; ".join(
            f"{root!r} ({_names(names)})" for root, names in stores.recorded.items()
        )
        raise click.UsageError(
            f"The Dagster instance at $DAGSTER_HOME ({home!r}) records assets in"
            f" {len(stores.recorded)} stores: {listing}. Choose one with --store."
        )
    if stores.recorded:
        ((root, names),) = stores.recorded.items()
        return StoreChoice(root, f"from $DAGSTER_HOME's materializations of {_names(names)}")
    whose = f" of {asset!r}" if asset is not None else ""
    return StoreChoice(
        stores.default,
        f"the default store of the Dagster instance at $DAGSTER_HOME: no materialization{whose}"
        " records one",
    )


def _names(names: tuple[str, ...], shown: int = 3) -> str:
    """``'a', 'b', 'c' and 2 more``."""
    text = ", ".join(repr(name) for name in names[:shown])
    return text + (f" and {len(names) - shown} more" if len(names) > shown else "")


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
@store_option
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
    from dagster_ds.arrow import all_versions, kept_entries, retain

    if max_size is None and keep_versions is None:
        raise click.UsageError("Give --max-size, --keep-versions, or both.")
    choice = use_store(ctx)
    store = CacheStore(choice.root)
    pinned = _pinned_versions(store)
    if keep_versions is not None:
        retention = retain(store, keep_versions, pinned=pinned)
        if not retention.kept_versions and not retention.removed_versions:
            warn_nothing_found(choice, "stored asset versions")
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
@store_option
@click.pass_context
def explain_command(ctx: click.Context, old: str, new: str) -> None:
    """Say why two results differ: which code, global, closure cell or argument changed.

    OLD and NEW are fingerprints of cached results (their manifests keep the
    hash tree of the transform that made them), of dataset asset versions
    (their recipe or data version), or JSON files of hash trees. For asset
    versions the changes are said as the run log says them
    (``global 'MIN_WORDS': 8 → 10``, ``config 'factor': 1 → 2``), with the
    columns of each parent that changed (``parent 'raw': column 'label'
    changed in 1 of 20 shards``, from the stored records only). A
    fingerprint may be cut short, with or without the … we print after it.
    """
    (before, old_record), (after, new_record) = _tree(ctx, old), _tree(ctx, new)
    if before.kind == after.kind == "dataset_asset":
        from dagster_ds.orchestration import (
            carried_parent_records,
            column_changes,
            explain_differences,
            recorded_parents,
        )

        click.echo(f"{after.label}: {before.digest} → {after.digest}")
        lines = explain_differences(before, after)
        if old_record and new_record:
            store = CacheStore(use_store(ctx).root)
            old_parents, new_parents = recorded_parents(old_record), recorded_parents(new_record)
            known = {**carried_parent_records(old_record), **carried_parent_records(new_record)}
            lines += column_changes(store, old_parents, new_parents, known)
        for line in lines:
            click.echo(f"  - {line}")
        return
    click.echo(str(explain(before, after)))


def _tree(ctx: click.Context, reference: str) -> tuple[HashNode, dict[str, Any]]:
    """The hash tree ``reference`` names, and its stored record ({} for a JSON file)."""
    path = Path(reference)
    if path.is_file():
        return HashNode.from_dict(json.loads(path.read_text())), {}
    metadata = _resolve(reference, use_store(ctx))
    tree = metadata.get("hash_tree")
    if not isinstance(tree, dict):
        raise click.BadParameter(
            f"the stored result {reference!r} records no hash tree (a random fingerprint)."
        )
    return HashNode.from_dict(tree), metadata


def _resolve(reference: str, choice: StoreChoice) -> dict[str, Any]:
    """The metadata of the one stored result ``reference`` names (or starts) in the store.

    A result is named by its key, or, for an asset version, by its recipe
    fingerprint or content fingerprint (the data version the UI shows).
    """
    wanted = fingerprint_prefix(reference)
    if len(wanted) < 6:
        raise click.BadParameter(f"{reference!r}: give at least 6 characters of a fingerprint.")
    found: dict[str, dict[str, Any]] = {}
    for info in CacheStore(choice.root).ls():
        names = [info.fingerprint, *_recipe_and_data_version(info.metadata)]
        if any(name.startswith(wanted) for name in names):
            found[info.fingerprint] = dict(info.metadata)
    if not found:
        raise click.BadParameter(
            f"{reference!r} is neither a JSON file nor (the start of) the fingerprint of a stored"
            f" result or asset version in {choice.root!r} ({choice.reason}); list them with"
            " 'dagster-ds cache ls', or give the store they are in with --store."
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
    type=Fingerprint(),
    default=None,
    help="The version (its recipe or content fingerprint, or a unique start); default: newest.",
)
@store_option
@click.pass_context
def export_command(ctx: click.Context, asset: str, path: str, fingerprint: str | None) -> None:
    """Write a stored asset version in save_to_disk layout, for datasets.load_from_disk.

    ASSET is the asset key ("a/b" for a prefixed key); PATH a folder or fsspec URL.
    """
    import dagster as dg

    from dagster_ds.orchestration import DatasetStore

    choice = use_store(ctx, asset)
    store = DatasetStore(choice.root)
    key = dg.AssetKey.from_user_string(asset)
    versions = store.versions(key)
    if fingerprint is not None:
        versions = [
            record
            for record in versions
            if any(name.startswith(fingerprint) for name in _recipe_and_data_version(record))
        ]
    if not versions:
        raise click.ClickException(
            f"No stored version of asset {asset!r}"
            + (f" matches {fingerprint!r}" if fingerprint else "")
            + f" in {choice.root!r} ({choice.reason}); materialize it, or give the store it is"
            " in with --store."
        )
    recipes = {_recipe(record) for record in versions}
    if fingerprint is not None and len(recipes) > 1:
        raise click.ClickException(
            f"{fingerprint!r} starts several versions of {asset!r}; give more characters."
        )
    chosen = _recipe(versions[0])
    store.export(key, chosen, path)
    click.echo(f"Exported {asset} ({chosen}) to {path}")


# A stored version's record names its recipe ``fingerprint`` and its ``content_fingerprint``;
# ``recipe`` and ``data_version`` are their new names (either may be recorded).
_RECIPE_KEYS = ("recipe", "fingerprint")
_DATA_VERSION_KEYS = ("data_version", "content_fingerprint")


def _recipe(record: Mapping[str, Any]) -> str:
    """The recipe fingerprint a stored version's record names."""
    return next(str(record[name]) for name in _RECIPE_KEYS if isinstance(record.get(name), str))


def _recipe_and_data_version(record: Mapping[str, Any]) -> list[str]:
    """The fingerprints a stored record is known by (besides its key)."""
    return [
        value
        for name in (*_RECIPE_KEYS, *_DATA_VERSION_KEYS)
        if isinstance(value := record.get(name), str)
    ]


main.add_command(hub_group)
main.add_command(rollback_command)
main.add_command(plan_command)
main.add_command(promote_command)
main.add_command(diff_command)

"""``dagster-ds diff``: what changed between two stored versions of a dataset asset.

Example:
    $ dagster-ds diff tokenized
    $ dagster-ds diff tokenized 5f0c22a9 9a2b41c7 --key id --json
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import click

from dagster_ds.cli._cache import Fingerprint, StoreChoice, store_option, use_store


@click.command(name="diff")
@click.argument("asset")
@click.argument("old", required=False, type=Fingerprint())
@click.argument("new", required=False, type=Fingerprint())
@click.option("--key", default=None, help="A column naming rows: match changed rows by it.")
@click.option("--partition", default=None, help="The partition to compare (partitioned assets).")
@click.option(
    "--samples",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Rows of each kind (added, removed, changed) to show.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object, for machines.")
@store_option
@click.pass_context
def diff_command(
    ctx: click.Context,
    asset: str,
    old: str | None,
    new: str | None,
    key: str | None,
    partition: str | None,
    samples: int,
    as_json: bool,
) -> None:
    """Show what changed between two stored versions of ASSET: schema, rows, columns.

    OLD and NEW are versions of ASSET: a recipe or data version fingerprint, or a
    unique start of one (default: the two latest stored versions; with OLD only,
    NEW is the latest). Shards equal in both versions are not read; the rows of
    the others are compared as multisets (with --key, rows with the same key
    are one changed row, and the columns that changed in them are counted).
    """
    import dagster as dg

    from dagster_ds.arrow import diff_versions
    from dagster_ds.errors import DagsterDsError
    from dagster_ds.orchestration import DatasetStore

    choice = use_store(ctx, asset)
    store = DatasetStore(choice.root)
    asset_key = dg.AssetKey.from_user_string(asset)
    versions = _of_partition(store.versions(asset_key), asset, partition)
    before, after = _chosen(versions, asset, old, new, choice)
    try:
        found = diff_versions(store.cache, before["key"], after["key"], key=key, samples=samples)
    except DagsterDsError as error:
        raise click.ClickException(str(error)) from error
    report = {"asset": asset, "old": _described(before), "new": _described(after)}
    report.update(found.to_dict())
    if as_json:
        click.echo(json.dumps(report, default=str, sort_keys=True))
        return
    for line in _lines(report):
        click.echo(line)


def _of_partition(
    versions: list[dict[str, Any]], asset: str, partition: str | None
) -> list[dict[str, Any]]:
    """The versions of ``partition``; without it, of the one partition they have (if any)."""
    if partition is not None:
        return [record for record in versions if record.get("partition") == partition]
    partitions = sorted({str(record["partition"]) for record in versions if "partition" in record})
    if len(partitions) > 1:
        shown = ", ".join(repr(name) for name in partitions[:5])
        more = f" and {len(partitions) - 5} more" if len(partitions) > 5 else ""
        raise click.UsageError(
            f"Asset {asset!r} is partitioned ({shown}{more} are stored): choose one with"
            " --partition."
        )
    return versions


def _chosen(
    versions: list[dict[str, Any]],
    asset: str,
    old: str | None,
    new: str | None,
    choice: StoreChoice,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The (old, new) version records the arguments name, newest first by default."""
    if len(versions) < (2 if old is None else 1):
        raise click.ClickException(
            f"Asset {asset!r} has {len(versions)} stored version(s) in {choice.root!r}"
            f" ({choice.reason}); a diff needs two: materialize it again after a change, or give"
            " the store they are in with --store."
        )
    if old is None:
        return versions[1], versions[0]
    before = _named(versions, asset, old)
    after = _named(versions, asset, new) if new is not None else versions[0]
    return before, after


def _named(versions: Sequence[dict[str, Any]], asset: str, prefix: str) -> dict[str, Any]:
    """The one version whose recipe or data version starts with ``prefix``."""
    found = [
        record
        for record in versions
        if any(name.startswith(prefix) for name in _fingerprints(record))
    ]
    if not found:
        known = "; ".join(_candidate(record) for record in versions[:5])
        raise click.BadParameter(
            f"{prefix!r} starts no stored version of {asset!r}. Its versions, newest first:"
            f" {known}{' ...' if len(versions) > 5 else ''}."
        )
    if len({record["content_fingerprint"] for record in found}) > 1:
        listing = "; ".join(_candidate(record) for record in found[:5])
        raise click.BadParameter(
            f"{prefix!r} starts {len(found)} versions of {asset!r}: {listing}. Give more"
            " characters."
        )
    return found[0]  # versions with the same data: the newest


def _fingerprints(record: Mapping[str, Any]) -> list[str]:
    return [
        str(record[name]) for name in ("fingerprint", "content_fingerprint") if record.get(name)
    ]


def _candidate(record: Mapping[str, Any]) -> str:
    return (
        f"recipe {record['fingerprint']} (data version {record['content_fingerprint']},"
        f" stored {str(record['created'])[:19]})"
    )


def _described(record: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "recipe": record["fingerprint"],
        "data_version": record["content_fingerprint"],
        "created": record["created"],
        "num_rows": record.get("num_rows"),
        **({"partition": record["partition"]} if "partition" in record else {}),
    }


def _lines(report: Mapping[str, Any]) -> list[str]:
    """The report as text."""
    old, new = report["old"], report["new"]
    lines = [
        f"{report['asset']}: {old['recipe'][:12]}… ({old['num_rows']} rows, stored"
        f" {old['created'][:19]}) → {new['recipe'][:12]}… ({new['num_rows']} rows, stored"
        f" {new['created'][:19]})",
        "schema: " + (_schema(report["schema"]) or "unchanged"),
    ]
    by_key = f" (by key {report['key']!r})" if report["key"] else ""
    changed = f", {report['rows_changed']} changed" if report["key"] else ""
    lines.append(
        f"rows: {report['rows_added']} added, {report['rows_removed']} removed{changed}{by_key}"
    )
    columns = ", ".join(f"{name} ({count})" for name, count in report["columns_changed"].items())
    lines.append(f"columns changed: {columns or 'none'}")
    read = report["shards_read"]
    lines.append(
        f"shards: {report['shards_unchanged']} unchanged (not read); {read['old']} old and"
        f" {read['new']} new compared row by row ({report['rows_hashed']} rows hashed)"
    )
    samples = report["samples"]
    for kind in ("added", "removed"):
        if samples.get(kind):
            lines.append(f"{kind} rows (first {len(samples[kind])}):")
            lines.extend(f"  {json.dumps(row, default=str)}" for row in samples[kind])
    if samples.get("changed"):
        lines.append(f"changed rows (first {len(samples['changed'])}):")
        for change in samples["changed"]:
            differences = [
                f"{name}: {change['old'][name]!r} → {value!r}"
                for name, value in change["new"].items()
                if change["old"].get(name) != value
            ]
            lines.append(f"  {report['key']}={change['key']!r}: {'; '.join(differences)}")
    return lines


def _schema(schema: Mapping[str, Any]) -> str:
    parts = [f"+{name} ({kind})" for name, kind in schema["added"].items()]
    parts += [f"-{name} ({kind})" for name, kind in schema["removed"].items()]
    parts += [
        f"{name}: {types['old']} → {types['new']}" for name, types in schema["retyped"].items()
    ]
    return ", ".join(parts)

"""``dagster-ds cache``: list, verify, garbage-collect and clean the cache."""

from __future__ import annotations

import datetime
import json

import click

from dagster_ds.cache._store import CacheStore
from dagster_ds.cache._units import format_size, parse_duration, parse_size


class Size(click.ParamType[int, object]):
    name = "size"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_size(str(value))
        except ValueError as error:
            self.fail(str(error), param, ctx)


class Duration(click.ParamType[float, object]):
    name = "duration"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, int | float):
            return float(value)
        try:
            return parse_duration(str(value))
        except ValueError as error:
            self.fail(str(error), param, ctx)


class _Root:
    def __init__(self, root: str | None) -> None:
        self.root = root


def cache_store(ctx: click.Context) -> CacheStore:
    root = ctx.find_object(_Root)
    return CacheStore(root.root if root is not None else None)


@click.group(name="cache")
@click.option(
    "--dir",
    "root",
    metavar="PATH_OR_URL",
    help="Cache root (default: $DAGSTER_DS_CACHE, else ~/.cache/dagster_ds).",
)
@click.pass_context
def cache_group(ctx: click.Context, root: str | None) -> None:
    """Inspect and maintain the dataset cache."""
    ctx.obj = _Root(root)


def _ago(moment: datetime.datetime) -> str:
    seconds = (datetime.datetime.now(datetime.UTC) - moment).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


@cache_group.command(name="ls")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per entry.")
@click.pass_context
def ls_command(ctx: click.Context, as_json: bool) -> None:
    """List entries, most recently used first."""
    store = cache_store(ctx)
    infos = store.ls()
    if as_json:
        for info in infos:
            record = {
                "fingerprint": info.fingerprint,
                "size": info.size,
                "files": list(info.files),
                "created": info.created.isoformat(),
                "last_used": info.last_used.isoformat(),
                "in_use": info.in_use,
                "metadata": info.metadata,
            }
            click.echo(json.dumps(record, sort_keys=True))
        return
    for info in infos:
        flag = "  in use" if info.in_use else ""
        click.echo(
            f"{info.fingerprint}  {format_size(info.size):>9}  {len(info.files):>3} files  "
            f"used {_ago(info.last_used)}{flag}"
        )
    total = sum(info.size for info in infos)
    click.echo(f"{len(infos)} entries, {format_size(total)} in {store.root}")


@cache_group.command(name="verify")
@click.argument("fingerprints", nargs=-1)
@click.pass_context
def verify_command(ctx: click.Context, fingerprints: tuple[str, ...]) -> None:
    """Check every file's checksum (of all entries, or the given ones).

    Corrupt entries are moved to quarantine/; the exit status is 1 if any was found.
    """
    store = cache_store(ctx)
    reports = [store.verify(fp) for fp in fingerprints] if fingerprints else [store.verify()]
    bad = False
    for report in reports:
        for key, problems in report.corrupt.items():
            bad = True
            click.echo(f"CORRUPT {key}: {'; '.join(problems)} (quarantined)")
        for key in report.missing:
            bad = True
            click.echo(f"MISSING {key}")
    checked = sum(len(report.checked) for report in reports)
    click.echo(f"{checked} entries verified, {sum(len(r.corrupt) for r in reports)} corrupt")
    if bad:
        ctx.exit(1)


@cache_group.command(name="clean")
@click.option(
    "--older-than",
    type=Duration(),
    default="1h",
    show_default=True,
    help="Grace period for tmp/ items whose writer cannot be checked (other hosts).",
)
@click.pass_context
def clean_command(ctx: click.Context, older_than: float) -> None:
    """Remove what killed writers left in tmp/."""
    removed = cache_store(ctx).clean_tmp(older_than)
    for path in removed:
        click.echo(f"removed {path}")
    click.echo(f"{len(removed)} items removed")

"""``dagster-ds cache``: list, verify, garbage-collect and clean the cache.

Also the pieces every ``dagster-ds`` command shares: the ``--store`` option
(after the command), the ``store:`` line each command prints on stderr, and
fingerprint arguments as copied from our own output (``5f0c22a9…``).
"""

from __future__ import annotations

import datetime
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click

from dagster_ds.cache import (
    ENV_VAR,
    CacheStore,
    default_cache_root,
    format_size,
    parse_duration,
    parse_size,
)

_Command = TypeVar("_Command", bound=Callable[..., Any])


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


@dataclass(frozen=True)
class StoreChoice:
    """The store a command uses, and how it was chosen (both said on stderr).

    Attributes:
        root: The store: a folder or fsspec URL.
        reason: How it was chosen, in words (``from --store``).
    """

    root: str
    reason: str


StoreFinder = Callable[[str | None], StoreChoice]
"""Finds the store when no option names one, given the asset the command is about (if any)."""


def default_store(asset: str | None = None) -> StoreChoice:
    """The dataset cache: ``$DAGSTER_DS_CACHE``, else ``~/.cache/dagster_ds``."""
    del asset  # the cache holds every asset's versions
    if os.environ.get(ENV_VAR, "").strip():
        return StoreChoice(default_cache_root(), f"from ${ENV_VAR}")
    return StoreChoice(default_cache_root(), f"the default: neither --store nor ${ENV_VAR} is set")


@dataclass
class StoreOptions:
    """What the command line says about the store; the ``dagster-ds`` context object.

    Attributes:
        finder: Finds the store when no option names one.
        store: ``--store``.
        command_dir: ``--dir`` after a command (deprecated).
        group_dir: ``cache --dir`` (deprecated).
        chosen: The stores chosen so far, by asset (each is said once).
    """

    finder: StoreFinder = default_store
    store: str | None = None
    command_dir: str | None = None
    group_dir: str | None = None
    chosen: dict[str | None, StoreChoice] = field(default_factory=dict[str | None, StoreChoice])

    def named(self) -> StoreChoice | None:
        """The store an option names, if one does (``--store`` first)."""
        if self.store:
            return StoreChoice(self.store, "from --store")
        if self.command_dir:
            return StoreChoice(self.command_dir, "from --dir, deprecated: use --store")
        if self.group_dir:
            return StoreChoice(
                self.group_dir, "from 'cache --dir', deprecated: use --store after the command"
            )
        return None


def use_store(ctx: click.Context, asset: str | None = None) -> StoreChoice:
    """The store the command works on; says which, and how it was chosen, on stderr.

    An option names it, else the context's finder finds it (for ``asset``).
    """
    options = ctx.ensure_object(StoreOptions)
    if asset not in options.chosen:
        choice = options.named() or options.finder(asset)
        click.echo(f"store: {choice.root} ({choice.reason})", err=True)
        options.chosen[asset] = choice
    return options.chosen[asset]


def warn_nothing_found(choice: StoreChoice, what: str) -> None:
    """Say on stderr that the store holds no ``what``: maybe it is the wrong store."""
    click.echo(
        f"warning: no {what} in {choice.root!r} ({choice.reason}); if they are in another"
        " store, give it with --store.",
        err=True,
    )


def _remember(name: str) -> Callable[[click.Context, click.Parameter, str | None], str | None]:
    """An option callback that records the option's value in the `StoreOptions`."""

    def remember(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        del param
        if value is not None:
            setattr(ctx.ensure_object(StoreOptions), name, value)
            if name != "store":
                click.echo(
                    "warning: --dir is deprecated; give --store after the command"
                    " (dagster-ds cache gc --store PATH_OR_URL).",
                    err=True,
                )
        return value

    return remember


_STORE_HELP = (
    "The store: a folder or fsspec URL. Default: with $DAGSTER_HOME set, the store its"
    " materializations record (else the instance's default store); otherwise"
    f" ${ENV_VAR}, else ~/.cache/dagster_ds."
)


def store_option(command: _Command) -> _Command:
    """Give a command ``--store PATH_OR_URL`` (and the hidden, deprecated ``--dir``)."""
    command = click.option(
        "--dir", "command_dir", hidden=True, expose_value=False, callback=_remember("command_dir")
    )(command)
    return click.option(
        "--store",
        metavar="PATH_OR_URL",
        expose_value=False,
        callback=_remember("store"),
        help=_STORE_HELP,
    )(command)


_ELLIPSIS = re.compile(r"(…|\.\.\.)$")


def fingerprint_prefix(text: str) -> str:
    """A fingerprint (or its start) as typed or copied: trimmed, lower case, no trailing ``…``.

    Example:
        >>> fingerprint_prefix(" 5F0C22A9… ")
        '5f0c22a9'
    """
    return _ELLIPSIS.sub("", text.strip()).strip().lower()


class Fingerprint(click.ParamType[str, object]):
    """A fingerprint or its start; a trailing ``…`` or ``...`` (as we print them) is dropped."""

    name = "fingerprint"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> str:
        return fingerprint_prefix(str(value))


@click.group(name="cache")
@click.option(
    "--dir", "group_dir", hidden=True, expose_value=False, callback=_remember("group_dir")
)
def cache_group() -> None:
    """Inspect and maintain the dataset store (or cache)."""


def _ago(moment: datetime.datetime) -> str:
    seconds = (datetime.datetime.now(datetime.UTC) - moment).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


@cache_group.command(name="ls")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per entry.")
@store_option
@click.pass_context
def ls_command(ctx: click.Context, as_json: bool) -> None:
    """List entries, most recently used first."""
    choice = use_store(ctx)
    store = CacheStore(choice.root)
    infos = store.ls()
    if not infos:
        warn_nothing_found(choice, "entries")
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
@click.argument("fingerprints", nargs=-1, type=Fingerprint())
@store_option
@click.pass_context
def verify_command(ctx: click.Context, fingerprints: tuple[str, ...]) -> None:
    """Check every file's checksum (of all entries, or the given ones).

    Corrupt entries are moved to quarantine/; the exit status is 1 if any was found.
    """
    store = CacheStore(use_store(ctx).root)
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
@store_option
@click.pass_context
def clean_command(ctx: click.Context, older_than: float) -> None:
    """Remove what killed writers left in tmp/."""
    removed = CacheStore(use_store(ctx).root).clean_tmp(older_than)
    for path in removed:
        click.echo(f"removed {path}")
    click.echo(f"{len(removed)} items removed")

"""``dagster-ds plan``: what a refresh would run and skip, why, and what it would cost.

The code location is loaded as the ``dagster`` command line loads it
(``-w workspace.yaml``, ``-m module``, ``-f file``, with ``-a`` and ``-d``),
the instance from ``$DAGSTER_HOME``. Nothing is run and nothing is written:
not to the instance, not to the store.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

import click

from dagster_ds.cli._cache import store_option, use_store
from dagster_ds.cli._locations import code_location_options, load_definitions


@click.command(name="plan")
@code_location_options
@click.option(
    "--select",
    default="*",
    show_default=True,
    help="The assets to plan, in Dagster's asset selection syntax (e.g. 'group:docs', 'key:a+').",
)
@click.option(
    "--lookback",
    type=click.IntRange(min=1),
    default=None,
    help="Plan only the latest N time windows of time-partitioned assets (default: all).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@store_option
@click.pass_context
def plan_command(
    ctx: click.Context,
    workspace: str | None,
    module: str | None,
    file: str | None,
    attribute: str | None,
    working_directory: str | None,
    select: str,
    lookback: int | None,
    as_json: bool,
) -> None:
    """Say what a refresh would run and skip, and why, without running anything.

    For each selected asset (each partition of a partitioned one): run or
    skip, why in the words the run records in dagster_ds/changed, and for a
    run an estimate of its time and bytes from the earlier runs recorded in
    the instance ($DAGSTER_HOME). Sources upstream are fingerprinted from their
    files. No run is launched, no event is written, and the store is left
    byte for byte as it was.
    """
    import dagster as dg

    from dagster_ds.orchestration import DatasetStore, plan_refresh

    home = os.environ.get("DAGSTER_HOME", "").strip()
    if not home or not os.path.isdir(home):
        raise click.UsageError(
            f"$DAGSTER_HOME is {home!r}: set it to your Dagster instance's folder (a plan"
            " compares with what the instance recorded)."
        )
    definitions = load_definitions(workspace, module, file, attribute, working_directory)
    try:
        with warnings.catch_warnings():  # `group:` selections are beta in Dagster 1.13
            warnings.simplefilter("ignore", dg.BetaWarning)
            selection = dg.AssetSelection.from_string(select)
    except Exception as error:  # Dagster's parse error is not a public name
        raise click.BadParameter(f"{select!r}: {error}", param_hint="--select") from error
    choice = use_store(ctx)
    with dg.DagsterInstance.get() as instance:
        plan = plan_refresh(
            definitions.get_repository_def(),
            instance,
            selection,
            store=DatasetStore(choice.root),
            lookback=lookback if lookback is not None else sys.maxsize,
        )
    if as_json:
        click.echo(json.dumps(plan.to_json(), indent=2, ensure_ascii=False))
    else:
        click.echo(plan.describe())

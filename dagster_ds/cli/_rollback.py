"""``dagster-ds rollback``: make an earlier stored version of an asset its latest again."""

from __future__ import annotations

import os

import click

from dagster_ds.cli._cache import Fingerprint, store_option, use_store
from dagster_ds.errors import DagsterDsError


@click.command(name="rollback")
@click.argument("asset")
@click.argument("fingerprint", type=Fingerprint())
@click.option("--partition", default=None, help="The partition, for a partitioned asset.")
@click.option(
    "--no-hub",
    is_flag=True,
    help="Do not republish to the Hub, even if the version was pushed there.",
)
@store_option
@click.pass_context
def rollback_command(
    ctx: click.Context, asset: str, fingerprint: str, partition: str | None, no_hub: bool
) -> None:
    r"""Record an earlier stored version of ASSET as its latest materialization.

    FINGERPRINT is the version's recipe or content fingerprint (the data version
    the UI shows), or a unique start of one. Nothing is copied: the version is in
    the store. The materialization (tagged ``dagster_ds/rollback``) carries the
    version's data version, so the asset's children turn stale or fresh as if it
    had computed that version. A version that was pushed to the Hub is pushed
    again, in one commit titled as a rollback (the token comes from $HF_TOKEN).
    The instance is $DAGSTER_HOME's.

    \b
    Example:
        $ dagster-ds rollback cleaned 5f0c22a9
    """
    import dagster as dg

    from dagster_ds.orchestration import (
        DatasetStore,
        find_rollback,
        hub_of_description,
        record_rollback,
        republish_rollback,
    )

    if not os.environ.get("DAGSTER_HOME", "").strip():
        raise click.UsageError(
            "A rollback records a materialization in a Dagster instance: set $DAGSTER_HOME to"
            " the instance's folder."
        )
    key = dg.AssetKey.from_user_string(asset)
    store = DatasetStore(use_store(ctx, asset).root)
    with dg.DagsterInstance.get() as instance:
        try:
            rollback = find_rollback(instance, store, key, fingerprint, partition=partition)
            if rollback.replaced == rollback.recipe:
                click.echo(f"{asset}: version {rollback.recipe} is already the latest.")
                return
            pushed = None
            if rollback.hub_target is not None and not no_hub:
                hub = hub_of_description(rollback.hub_target, os.environ.get("HF_TOKEN"))
                with hub.yield_for_execution(dg.build_init_resource_context()) as ready:
                    pushed = republish_rollback(store, rollback, ready)
            record_rollback(instance, rollback, pushed)
        except DagsterDsError as error:
            raise click.ClickException(str(error)) from error
    click.echo(f"{asset}: {rollback.note} (data version {rollback.data_version}).")
    if pushed is not None:
        click.echo(f"Hub: {'unchanged' if pushed.skipped else 'pushed'} {pushed.commit_url}")

"""``dagster-ds promote``: ship development's versions to production without recomputing them."""

from __future__ import annotations

import os

import click

from dagster_ds.cli._locations import code_location_options, load_definitions
from dagster_ds.errors import DagsterDsError


@click.command(name="promote")
@click.argument("assets", nargs=-1, required=True)
@click.option(
    "--from",
    "source",
    required=True,
    metavar="PATH_OR_URL",
    help="Development's store (its DatasetIOManager base_dir).",
)
@click.option(
    "--to",
    "target",
    required=True,
    metavar="PATH_OR_URL",
    help="Production's store.",
)
@click.option(
    "--instance",
    "prod_home",
    default=None,
    metavar="FOLDER",
    help="Production's Dagster instance (its DAGSTER_HOME); default: $DAGSTER_HOME.",
)
@code_location_options
def promote_command(
    assets: tuple[str, ...],
    source: str,
    target: str,
    prod_home: str | None,
    workspace: str | None,
    module: str | None,
    file: str | None,
    attribute: str | None,
    working_directory: str | None,
) -> None:
    r"""Copy the latest versions of ASSETS from development to production, and record them there.

    Development's instance is $DAGSTER_HOME; its latest materialization of each
    asset names the version. Only the entries production lacks are copied, and
    the copy must hash to the data version development recorded. Then each is
    recorded in production's instance with the same data, code and input
    versions, so production's children see it fresh or stale as if production
    had computed it. The code location (-w, -m, -f) is production's deployed
    code: an asset whose code version there differs is refused, before anything
    is copied.

    \b
    Example:
        $ DAGSTER_HOME=dev-home dagster-ds promote cleaned tokens \
            --from s3://bucket/dev --to s3://bucket/prod --instance prod-home -m pipeline
    """
    import dagster as dg

    from dagster_ds.orchestration import DatasetStore, plan_promotion, promote

    dev_home = os.environ.get("DAGSTER_HOME", "").strip()
    if not dev_home or not os.path.isdir(dev_home):
        raise click.UsageError(
            f"$DAGSTER_HOME is {dev_home!r}: set it to development's Dagster instance folder."
        )
    repository = load_definitions(
        workspace, module, file, attribute, working_directory
    ).get_repository_def()
    deployed = {
        key: version
        for definition in repository.assets_defs_by_key.values()
        for key, version in definition.code_versions_by_key.items()
    }
    keys = [dg.AssetKey.from_user_string(asset) for asset in assets]
    dev, prod = DatasetStore(source), DatasetStore(target)
    with (
        dg.DagsterInstance.from_config(dev_home) as dev_instance,
        dg.DagsterInstance.from_config(prod_home or dev_home) as prod_instance,
    ):
        try:
            steps = plan_promotion(dev_instance, dev, prod_instance, keys, deployed)
            for step in steps:
                name = step.asset.to_user_string()
                if promote(step, dev, prod, prod_instance) is None:
                    click.echo(f"{name}: production already has {step.recipe} as latest.")
                else:
                    click.echo(
                        f"{name}: promoted {step.recipe} (data version {step.data_version})"
                        f" to {target}."
                    )
        except DagsterDsError as error:
            raise click.ClickException(str(error)) from error

"""Dataset transforms as Dagster assets whose version is the dataset's fingerprint.

The only package of dagster_ds that imports dagster. A `dataset_asset`'s code
version is its transform hash and its data version the fingerprint of the
dataset it produces, known before it runs: when the `DatasetIOManager` already
stores that fingerprint, the transform is skipped. Sources (`dataset_source`)
are observable, versioned by their files' content; `fingerprint_changed`
requests runs only where something changed; `HubResource` publishes finished
datasets (to an embedded local Hub when no token is configured).

Example:
    >>> import dagster as dg
    >>> from dagster_ds import Dataset
    >>> from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source
    >>> docs = dataset_source("docs", "json", data_files="data/*.jsonl")
    >>> @dataset_asset
    ... def lowercased(docs: Dataset) -> Dataset:
    ...     return docs.map(lambda row: {"text": row["text"].lower()})
    >>> defs = dg.Definitions(
    ...     assets=[docs, lowercased],
    ...     resources={"io_manager": DatasetIOManager(base_dir="/tmp/datasets")},
    ... )
"""

import dagster as dg

from dagster_ds import __version__

# Internal: for the other dagster_ds packages only; not public API.
from dagster_ds.orchestration._changes import carried_parent_records as carried_parent_records
from dagster_ds.orchestration._changes import column_changes as column_changes
from dagster_ds.orchestration._changes import explain_differences as explain_differences
from dagster_ds.orchestration._changes import recorded_parents as recorded_parents
from dagster_ds.orchestration._plan import plan_refresh as plan_refresh
from dagster_ds.orchestration._promote import plan_promotion as plan_promotion
from dagster_ds.orchestration._promote import promote as promote
from dagster_ds.orchestration._rollback import find_rollback as find_rollback
from dagster_ds.orchestration._rollback import hub_of_description as hub_of_description
from dagster_ds.orchestration._rollback import record_rollback as record_rollback
from dagster_ds.orchestration._rollback import republish_rollback as republish_rollback
from dagster_ds.orchestration._store_discovery import instance_stores as instance_stores
from dagster_ds.orchestration.asset import dataset_asset as dataset_asset
from dagster_ds.orchestration.automation import fingerprint_changed as fingerprint_changed
from dagster_ds.orchestration.automation import (
    fingerprint_refresh_schedule as fingerprint_refresh_schedule,
)
from dagster_ds.orchestration.automation import (
    fingerprint_refresh_sensor as fingerprint_refresh_sensor,
)
from dagster_ds.orchestration.automation import (
    fingerprint_source_sensor as fingerprint_source_sensor,
)
from dagster_ds.orchestration.checks import DatasetCheck as DatasetCheck
from dagster_ds.orchestration.checks import dataset_check as dataset_check
from dagster_ds.orchestration.checks import row_count_check as row_count_check
from dagster_ds.orchestration.checks import schema_check as schema_check
from dagster_ds.orchestration.dask import DaskResource as DaskResource
from dagster_ds.orchestration.io_manager import DatasetIOManager as DatasetIOManager
from dagster_ds.orchestration.io_manager import DatasetStore as DatasetStore
from dagster_ds.orchestration.metadata import DatasetMetadataKey as DatasetMetadataKey
from dagster_ds.orchestration.publish import publish_to_hub as publish_to_hub
from dagster_ds.orchestration.resource import HubResource as HubResource
from dagster_ds.orchestration.resource import HubTarget as HubTarget
from dagster_ds.orchestration.source import dataset_source as dataset_source
from dagster_ds.orchestration.translator import DatasetAssetProps as DatasetAssetProps
from dagster_ds.orchestration.translator import DatasetTranslator as DatasetTranslator
from dagster_ds.orchestration.translator import (
    DatasetTranslatorSettings as DatasetTranslatorSettings,
)
from dagster_ds.orchestration.versioning import asset_fingerprint as asset_fingerprint
from dagster_ds.orchestration.versioning import transform_hash as transform_hash

# As Dagster's integrations do: the UI and `dagster` tooling list dagster-ds and its version.
# (A top-level dagster name, re-exported without `as`, hence the pyright note.)
dg.DagsterLibraryRegistry.register(  # pyright: ignore[reportPrivateImportUsage]
    "dagster-ds", __version__, is_dagster_package=False
)

__all__ = [
    "DaskResource",
    "DatasetAssetProps",
    "DatasetCheck",
    "DatasetIOManager",
    "DatasetMetadataKey",
    "DatasetStore",
    "DatasetTranslator",
    "DatasetTranslatorSettings",
    "HubResource",
    "HubTarget",
    "asset_fingerprint",
    "dataset_asset",
    "dataset_check",
    "dataset_source",
    "fingerprint_changed",
    "fingerprint_refresh_schedule",
    "fingerprint_refresh_sensor",
    "fingerprint_source_sensor",
    "publish_to_hub",
    "row_count_check",
    "schema_check",
    "transform_hash",
]

#: Names other dagster_ds packages import from here; not public API (may change).
__internal__ = [
    "carried_parent_records",
    "column_changes",
    "explain_differences",
    "find_rollback",
    "hub_of_description",
    "instance_stores",
    "plan_promotion",
    "plan_refresh",
    "promote",
    "record_rollback",
    "recorded_parents",
    "republish_rollback",
]

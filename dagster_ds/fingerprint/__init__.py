"""Fingerprints: deterministic 128-bit hashes of data, code and transforms.

Example:
    >>> from dagster_ds.fingerprint import Hasher, update_fingerprint
    >>> parent = Hasher.hash({"text": ["a", "bb"]})
    >>> child = update_fingerprint(parent, "map", {"function": str.upper})
    >>> child != parent
    True
"""

# Internal: for the other dagster_ds packages only; not public API.
from dagster_ds.fingerprint._arrow import ColumnDigests as ColumnDigests
from dagster_ds.fingerprint._arrow import (
    arrow_digest as arrow_digest,  # pyright: ignore[reportUnknownVariableType]
)
from dagster_ds.fingerprint._arrow import is_binary_like as is_binary_like
from dagster_ds.fingerprint._code import global_references as global_references
from dagster_ds.fingerprint._column_origins import ASSET_STEP as ASSET_STEP
from dagster_ds.fingerprint._column_origins import EVERY_COLUMN as EVERY_COLUMN
from dagster_ds.fingerprint._column_origins import ColumnOrigin as ColumnOrigin
from dagster_ds.fingerprint._column_origins import asset_names as asset_names
from dagster_ds.fingerprint._column_origins import column_origins as column_origins
from dagster_ds.fingerprint._column_origins import lineage_origins as lineage_origins
from dagster_ds.fingerprint._column_sources import added_column_sources as added_column_sources
from dagster_ds.fingerprint._column_sources import (
    combined_column_sources as combined_column_sources,
)
from dagster_ds.fingerprint._column_sources import filter_column_sources as filter_column_sources
from dagster_ds.fingerprint._column_sources import (
    flattened_column_sources as flattened_column_sources,
)
from dagster_ds.fingerprint._column_sources import map_column_sources as map_column_sources
from dagster_ds.fingerprint._column_sources import renamed_column_sources as renamed_column_sources
from dagster_ds.fingerprint._column_sources import same_column_sources as same_column_sources
from dagster_ds.fingerprint._hasher import arrow_value_hash as arrow_value_hash
from dagster_ds.fingerprint._lineage import LineageStep as LineageStep
from dagster_ds.fingerprint._public import Hasher as Hasher
from dagster_ds.fingerprint._public import explain as explain
from dagster_ds.fingerprint._tree import Difference as Difference
from dagster_ds.fingerprint._tree import Explanation as Explanation
from dagster_ds.fingerprint._tree import HashNode as HashNode
from dagster_ds.fingerprint._update import EXECUTION_ONLY_ARGUMENTS as EXECUTION_ONLY_ARGUMENTS
from dagster_ds.fingerprint._update import describe_transform as describe_transform
from dagster_ds.fingerprint._update import fingerprint_transform as fingerprint_transform
from dagster_ds.fingerprint._update import (
    generate_random_fingerprint as generate_random_fingerprint,
)
from dagster_ds.fingerprint._update import rebase_transform as rebase_transform
from dagster_ds.fingerprint._update import replace_arguments as replace_arguments
from dagster_ds.fingerprint._update import update_fingerprint as update_fingerprint

__all__ = [
    "EXECUTION_ONLY_ARGUMENTS",
    "Difference",
    "Explanation",
    "HashNode",
    "Hasher",
    "LineageStep",
    "describe_transform",
    "explain",
    "fingerprint_transform",
    "generate_random_fingerprint",
    "rebase_transform",
    "replace_arguments",
    "update_fingerprint",
]

#: Names other dagster_ds packages import from here; not public API (may change).
__internal__ = [
    "arrow_value_hash",
    "ASSET_STEP",
    "asset_names",
    "lineage_origins",
    "EVERY_COLUMN",
    "ColumnOrigin",
    "column_origins",
    "added_column_sources",
    "combined_column_sources",
    "filter_column_sources",
    "flattened_column_sources",
    "map_column_sources",
    "renamed_column_sources",
    "same_column_sources",
    "ColumnDigests",
    "arrow_digest",
    "global_references",
    "is_binary_like",
]

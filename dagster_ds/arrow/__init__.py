"""The map-style Dataset: Arrow tables with fingerprints, transforms cached by fingerprint.

Example:
    >>> from dagster_ds.arrow import Dataset
    >>> ds = Dataset.from_dict({"text": ["a", "bb"]})
    >>> ds.filter(lambda x: len(x["text"]) > 1).num_rows
    1

`DatasetDict` and the engine's combine, diff and parts functions are imported at the
first use of one of their names: a process that never uses them does not load them.
"""

import typing as _typing

from dagster_ds.arrow._column import Column as Column
from dagster_ds.arrow._column_reuse import ReuseNote as ReuseNote
from dagster_ds.arrow._column_reuse import column_reuse_off as column_reuse_off
from dagster_ds.arrow._column_reuse import noting_column_reuse as noting_column_reuse

# Internal: for the other dagster_ds packages only; not public API.
from dagster_ds.arrow._copied_records import comparable_record as comparable_record
from dagster_ds.arrow._copied_records import record_copied_outputs as record_copied_outputs
from dagster_ds.arrow._dataset import Dataset as Dataset
from dagster_ds.arrow._dataset_sources import in_cache_dir as in_cache_dir
from dagster_ds.arrow._entries import TableSink as TableSink
from dagster_ds.arrow._files import file_transforms as file_transforms
from dagster_ds.arrow._files import load_split as load_split
from dagster_ds.arrow._files import split_fingerprint as split_fingerprint
from dagster_ds.arrow._groups import DEFAULT_SHARD_BYTES as DEFAULT_SHARD_BYTES
from dagster_ds.arrow._groups import file_groups as file_groups
from dagster_ds.arrow._groups import group_transform as group_transform
from dagster_ds.arrow._groups import shard_bytes_of as shard_bytes_of
from dagster_ds.arrow._info import DatasetInfo as DatasetInfo
from dagster_ds.arrow._info import NamedSplit as NamedSplit
from dagster_ds.arrow._info import Split as Split
from dagster_ds.arrow._parallel import Piece as Piece
from dagster_ds.arrow._parallel import ShardWork as ShardWork
from dagster_ds.arrow._results import Transform as Transform
from dagster_ds.arrow._results import open_table_shard as open_table_shard
from dagster_ds.arrow._results import shard_table as shard_table
from dagster_ds.arrow._results import shards_result as shards_result
from dagster_ds.arrow._shards import Shard as Shard
from dagster_ds.arrow._shards import shards_fingerprint as shards_fingerprint
from dagster_ds.arrow._stored import VERSION_KIND as VERSION_KIND
from dagster_ds.arrow._stored import Retention as Retention
from dagster_ds.arrow._stored import StoredVersion as StoredVersion
from dagster_ds.arrow._stored import adopt as adopt
from dagster_ds.arrow._stored import all_versions as all_versions
from dagster_ds.arrow._stored import derived_key as derived_key
from dagster_ds.arrow._stored import describe_version as describe_version
from dagster_ds.arrow._stored import kept_entries as kept_entries
from dagster_ds.arrow._stored import open_version as open_version
from dagster_ds.arrow._stored import recorded_entries as recorded_entries
from dagster_ds.arrow._stored import retain as retain
from dagster_ds.arrow._stored import store_version as store_version
from dagster_ds.arrow._stored import version_intact as version_intact
from dagster_ds.arrow._stored import version_record as version_record
from dagster_ds.exports import lazy_exports as _lazy_exports
from dagster_ds.fingerprint import LineageStep as LineageStep

if _typing.TYPE_CHECKING:
    from dagster_ds.arrow._combine import concatenate_map_style as concatenate_map_style
    from dagster_ds.arrow._combine import interleave_map_style as interleave_map_style
    from dagster_ds.arrow._combine import merged_features as merged_features
    from dagster_ds.arrow._dict import DatasetDict as DatasetDict
    from dagster_ds.arrow._dict_disk import is_saved_dataset_dict as is_saved_dataset_dict
    from dagster_ds.arrow._diff import ShardChanges as ShardChanges
    from dagster_ds.arrow._diff import VersionDiff as VersionDiff
    from dagster_ds.arrow._diff import changed_shards as changed_shards
    from dagster_ds.arrow._diff import diff_records as diff_records
    from dagster_ds.arrow._diff import diff_versions as diff_versions
    from dagster_ds.arrow._parts import dataset_of_parts as dataset_of_parts

__all__ = ["Column", "Dataset", "DatasetDict", "DatasetInfo", "LineageStep", "NamedSplit", "Split"]

#: Names other dagster_ds packages import from here; not public API (may change).
__internal__ = [
    "DEFAULT_SHARD_BYTES",
    "Piece",
    "Retention",
    "ReuseNote",
    "Shard",
    "ShardChanges",
    "ShardWork",
    "StoredVersion",
    "TableSink",
    "Transform",
    "VERSION_KIND",
    "VersionDiff",
    "adopt",
    "all_versions",
    "changed_shards",
    "column_reuse_off",
    "comparable_record",
    "concatenate_map_style",
    "dataset_of_parts",
    "derived_key",
    "describe_version",
    "diff_records",
    "diff_versions",
    "file_groups",
    "file_transforms",
    "group_transform",
    "in_cache_dir",
    "interleave_map_style",
    "is_saved_dataset_dict",
    "kept_entries",
    "load_split",
    "merged_features",
    "noting_column_reuse",
    "open_table_shard",
    "open_version",
    "record_copied_outputs",
    "recorded_entries",
    "retain",
    "shard_bytes_of",
    "shard_table",
    "shards_fingerprint",
    "shards_result",
    "split_fingerprint",
    "store_version",
    "version_intact",
    "version_record",
]

#: Names imported at their first use, each from its module.
_LAZY = {
    "concatenate_map_style": "dagster_ds.arrow._combine",
    "interleave_map_style": "dagster_ds.arrow._combine",
    "merged_features": "dagster_ds.arrow._combine",
    "DatasetDict": "dagster_ds.arrow._dict",
    "is_saved_dataset_dict": "dagster_ds.arrow._dict_disk",
    "ShardChanges": "dagster_ds.arrow._diff",
    "VersionDiff": "dagster_ds.arrow._diff",
    "changed_shards": "dagster_ds.arrow._diff",
    "diff_records": "dagster_ds.arrow._diff",
    "diff_versions": "dagster_ds.arrow._diff",
    "dataset_of_parts": "dagster_ds.arrow._parts",
}


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY)

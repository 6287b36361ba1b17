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
from dagster_ds.fingerprint._code import global_references as global_references
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
    "ColumnDigests",
    "arrow_digest",
    "global_references",
]

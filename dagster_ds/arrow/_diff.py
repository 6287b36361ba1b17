"""What changed between two stored versions: schema, rows added and removed, columns changed.

The cost is what changed, not the size of the versions:

1. Shards are compared by their content fingerprints, which the version
   records hold: a shard of the old version matched by an equal shard of the
   new one is unchanged, and no byte of it is read.
2. Where both shards' table entries record per-column content fingerprints
   (``column_fingerprints`` in their metadata), a shard whose compared columns
   all have the same fingerprints as a shard of the other version matches it
   too, when only other columns changed (for example a column was added).
3. The rows of the remaining shards are hashed (`_row_hashes`: vectorised, no
   Python object per row) over the columns both versions have with the same
   type, and compared as multisets: a row of the new version without an equal
   row in the old one is *added*, and the other way round *removed*.

Without a key, a column's change count is the number of its values replaced:
of the removed and added rows' values in that column, the pairs that do not
match (the smaller of the two multiset differences). With ``key``, removed and
added rows with the same key are one *changed* row, and each column counts the
changed rows whose value in it differs.

A version with a row mapping (shuffled, sorted, selected) is compared as a
whole: its order crosses shards.

`changed_shards` says where two versions differ from their records alone (steps
1 and 2, no row read): how many shards changed, and in which columns where
both shards' entries recorded column fingerprints.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from dagster_ds.arrow._entries import read_indices
from dagster_ds.arrow._row_hashes import Hashes, row_hashes
from dagster_ds.arrow._stored import _Opener, version_record  # pyright: ignore[reportPrivateUsage]
from dagster_ds.cache import CacheStore
from dagster_ds.errors import ColumnNotFoundError, DatasetReleasedError, InvalidArgumentError
from dagster_ds.features import Features

#: The metadata item of a table entry holding its columns' content fingerprints, by name.
COLUMN_FINGERPRINTS = "column_fingerprints"


@dataclass(frozen=True)
class SchemaChange:
    """How the columns changed between two versions.

    Attributes:
        added: Columns only the new version has, with their Arrow types.
        removed: Columns only the old version has, with their Arrow types.
        retyped: Columns whose Arrow type changed: (old type, new type).
    """

    added: dict[str, str] = field(default_factory=dict[str, str])
    removed: dict[str, str] = field(default_factory=dict[str, str])
    retyped: dict[str, tuple[str, str]] = field(default_factory=dict[str, tuple[str, str]])

    @property
    def changed(self) -> bool:
        """Whether any column was added, removed or retyped."""
        return bool(self.added or self.removed or self.retyped)


@dataclass(frozen=True)
class VersionDiff:
    """The difference between two stored versions (see the module's docstring).

    Attributes:
        schema: How the columns changed.
        compared: The columns rows were compared on (both versions', same type).
        key: The key column rows were matched by, if any.
        rows_added: Rows of the new version with no equal row in the old one
            (with ``key``: whose key the old one lacks).
        rows_removed: Rows of the old version with no equal row in the new one.
        rows_changed: With ``key``: rows whose key is in both, with other values.
        columns_changed: Each compared column whose values changed, with a count.
        shards_unchanged: Shards matched by an equal shard of the other version (not read).
        shards_read: Shards of (old, new) whose rows were read and hashed.
        rows_hashed: Rows read and hashed, both versions together.
        samples: A few rows of each kind: ``added``, ``removed``, and with ``key``
            ``changed`` (each ``{"key": ..., "old": row, "new": row}``).
    """

    schema: SchemaChange
    compared: tuple[str, ...]
    key: str | None
    rows_added: int
    rows_removed: int
    rows_changed: int
    columns_changed: dict[str, int]
    shards_unchanged: int
    shards_read: tuple[int, int]
    rows_hashed: int
    samples: dict[str, list[Any]]

    @property
    def identical(self) -> bool:
        """Whether nothing changed: schema, rows and values."""
        return not (
            self.schema.changed
            or self.rows_added
            or self.rows_removed
            or self.rows_changed
            or self.columns_changed
        )

    def to_dict(self) -> dict[str, Any]:
        """The diff as JSON-ready data."""
        return {
            "schema": {
                "added": self.schema.added,
                "removed": self.schema.removed,
                "retyped": {
                    name: {"old": old, "new": new}
                    for name, (old, new) in self.schema.retyped.items()
                },
            },
            "compared_columns": list(self.compared),
            "key": self.key,
            "rows_added": self.rows_added,
            "rows_removed": self.rows_removed,
            "rows_changed": self.rows_changed,
            "columns_changed": self.columns_changed,
            "shards_unchanged": self.shards_unchanged,
            "shards_read": {"old": self.shards_read[0], "new": self.shards_read[1]},
            "rows_hashed": self.rows_hashed,
            "samples": self.samples,
        }


def diff_versions(
    store: CacheStore,
    old: str,
    new: str,
    *,
    key: str | None = None,
    samples: int = 3,
) -> VersionDiff:
    """Compare the versions stored under the keys ``old`` and ``new`` of ``store``.

    ``key``: a column matching removed and added rows as changed ones (it must
    be unique among them). ``samples``: rows of each kind to show (0: none, and
    no Python object is made per row).

    Raises:
        DatasetReleasedError: A version, or an entry it needs, is not in the store.
        ColumnNotFoundError: ``key`` is not a column both versions have with one type.
        InvalidArgumentError: ``key`` is not unique among the rows that changed.

    Example:
        >>> import tempfile
        >>> from dagster_ds.arrow import Dataset, store_version
        >>> store = CacheStore(tempfile.mkdtemp())
        >>> _ = store_version(store, "a" * 32, Dataset.from_dict({"n": [1, 2]}))
        >>> _ = store_version(store, "b" * 32, Dataset.from_dict({"n": [1, 3, 4]}))
        >>> found = diff_versions(store, "a" * 32, "b" * 32)
        >>> (found.rows_added, found.rows_removed, found.columns_changed)
        (2, 1, {'n': 1})
    """
    records = [_record(store, which, name) for which, name in ((old, "old"), (new, "new"))]
    return diff_records(store, records[0], records[1], key=key, samples=samples)


def diff_records(
    store: CacheStore,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    key: str | None = None,
    samples: int = 3,
) -> VersionDiff:
    """`diff_versions` of two version records already read (`version_record`)."""
    records = [old, new]
    features = [Features.from_yaml_list(record["features"]) for record in records]
    schema, compared = _schema_change(features[0].arrow_schema, features[1].arrow_schema)
    if key is not None and key not in compared:
        raise ColumnNotFoundError(
            f"The key column {key!r} is not a column both versions have with the same type"
            f" (they share {list(compared)!r}): give one of those with --key, or none."
        )
    sides = [_Side(store, record, compared) for record in records]
    try:
        unchanged = _match_shards(sides[0], sides[1])
        for side in sides:
            side.hash_rest()
        return _compare(sides[0], sides[1], schema, compared, key, samples, unchanged)
    finally:
        for side in sides:
            side.close()


@dataclass(frozen=True)
class ShardChanges:
    """Where two versions differ, from their records only (see `changed_shards`).

    Attributes:
        shards: The new version's shard count.
        changed: Its shards with no equal shard in the old version.
        columns: Each column whose fingerprint changed: in how many of those shards.
        unrecorded: Changed shards whose columns cannot be told (a shard added,
            or one of the two entries recorded no column fingerprints).
    """

    shards: int
    changed: int
    columns: dict[str, int]
    unrecorded: int


def changed_shards(
    store: CacheStore, old: Mapping[str, Any], new: Mapping[str, Any]
) -> ShardChanges:
    """Which shards and columns changed from the version record ``old`` to ``new``.

    Metadata only: shards are matched as `diff_records` matches them (content
    fingerprints, then column fingerprints), and each unmatched shard of ``new``
    is compared column by column with the old version's shard at its position,
    where both entries (with the entries whose columns they keep) recorded
    column fingerprints. Nothing else is read.

    Example:
        >>> import tempfile
        >>> from dagster_ds.arrow import Dataset, store_version
        >>> store = CacheStore(tempfile.mkdtemp())
        >>> _ = store_version(store, "a" * 32, Dataset.from_dict({"n": [1, 2]}))
        >>> _ = store_version(store, "b" * 32, Dataset.from_dict({"n": [1, 3]}))
        >>> found = changed_shards(store, version_record(store, "a" * 32) or {},
        ...                        version_record(store, "b" * 32) or {})
        >>> (found.changed, found.shards, found.unrecorded)
        (1, 1, 1)
    """
    features = [Features.from_yaml_list(record["features"]) for record in (old, new)]
    _, compared = _schema_change(features[0].arrow_schema, features[1].arrow_schema)
    sides = [_Side(store, record, compared) for record in (old, new)]
    try:
        if sides[0].whole or sides[1].whole:
            # Rows cross shards: every shard counts as changed, columns untold.
            total = len(sides[1].references)
            return ShardChanges(total, total, {}, total)
        _match_shards(sides[0], sides[1])
        columns: Counter[str] = Counter()
        unrecorded = 0
        for index in sides[1].unmatched:
            before = sides[0].all_fingerprints(index)
            after = sides[1].all_fingerprints(index)
            if before is None or after is None:
                unrecorded += 1
                continue
            names = {*before, *after}
            columns.update(name for name in names if before.get(name) != after.get(name))
        return ShardChanges(
            len(sides[1].references), len(sides[1].unmatched), dict(columns), unrecorded
        )
    finally:
        for side in sides:
            side.close()


def _record(store: CacheStore, key: str, name: str) -> dict[str, Any]:
    record = version_record(store, key)
    if record is None:
        raise DatasetReleasedError(
            f"The {name} version {key!r} is not stored in {store.root!r} (it was removed, or"
            " never stored there): list the stored versions, or give the store they are in."
        )
    return record


def _schema_change(old: pa.Schema, new: pa.Schema) -> tuple[SchemaChange, tuple[str, ...]]:
    """The schema change, and the columns compared (both versions', same type; new order)."""
    before = {column.name: column.type for column in old}
    after = {column.name: column.type for column in new}
    change = SchemaChange(
        added={name: str(kind) for name, kind in after.items() if name not in before},
        removed={name: str(kind) for name, kind in before.items() if name not in after},
        retyped={
            name: (str(before[name]), str(kind))
            for name, kind in after.items()
            if name in before and before[name] != kind
        },
    )
    compared = tuple(name for name, kind in after.items() if before.get(name) == kind)
    return change, compared


class _Side:
    """One version being compared: its shards, those matched, and the hashes of the rest."""

    def __init__(
        self, store: CacheStore, record: Mapping[str, Any], compared: Sequence[str]
    ) -> None:
        self.record = record
        self.compared = list(compared)
        self.opener = _Opener(store, record)
        self.references: list[dict[str, Any]] = list(record.get("shards", []))
        self.whole = bool(record.get("mapping"))
        self.unmatched = list(range(len(self.references)))
        self.tables: list[pa.Table] = []
        self.rows = np.zeros(0, np.uint64)
        self.columns: dict[str, Hashes] = {}

    def identities(self) -> list[tuple[Any, ...]]:
        """What names each shard's rows on the compared columns (equal: same rows)."""
        return [self._identity(reference) for reference in self.references]

    def _identity(self, reference: Mapping[str, Any]) -> tuple[Any, ...]:
        if not reference.get("rows"):
            columns = self._column_fingerprints(str(reference["table"]))
            if columns is not None and all(name in columns for name in self.compared):
                return ("columns", tuple(columns[name] for name in self.compared))
        if reference.get("content"):
            return ("content", reference["content"])
        return ("entries", reference["table"], reference.get("rows"))

    def _column_fingerprints(self, table: str) -> Mapping[str, Any] | None:
        embedded = self.record.get("entries")
        manifest = embedded.get(table) if isinstance(embedded, dict) else None
        metadata = manifest.get("metadata") if isinstance(manifest, dict) else None
        found = metadata.get(COLUMN_FINGERPRINTS) if isinstance(metadata, dict) else None
        return found if isinstance(found, dict) else None

    def all_fingerprints(self, index: int) -> dict[str, str] | None:
        """Every column's fingerprint of shard ``index``: its entry's and its bases'.

        None when the shard does not exist, keeps only some rows, or some column
        of it has no recorded fingerprint.
        """
        if index >= len(self.references) or self.references[index].get("rows"):
            return None
        reference = self.references[index]
        found: dict[str, str] = {}
        for table in [reference["table"], *(reference.get("bases") or [])]:
            recorded = self._column_fingerprints(str(table)) or {}
            for name, value in recorded.items():
                found.setdefault(str(name), str(value))
        names = Features.from_yaml_list(self.record["features"]).arrow_schema.names
        if not all(name in found for name in names):
            return None
        return {name: found[name] for name in names}

    def hash_rest(self) -> None:
        """Read the unmatched shards (all of a mapped version) and hash their rows."""
        tables = [self._table(self.references[index]) for index in self.unmatched]
        if self.whole:
            mapping = self.opener.entry(str(self.record["mapping"]))
            if mapping is None:
                raise self._gone(str(self.record["mapping"]))
            schema = Features.from_yaml_list(self.record["features"]).arrow_schema
            whole = pa.concat_tables(tables) if tables else schema.empty_table()
            tables = [whole.take(read_indices(mapping))]
        self.tables = tables
        hashed = [row_hashes(table, self.compared) for table in tables]
        self.rows = np.concatenate([rows for rows, _ in hashed] or [np.zeros(0, np.uint64)])
        self.columns = {
            name: np.concatenate(
                [columns[name] for _, columns in hashed] or [np.zeros(0, np.uint64)]
            )
            for name in self.compared
        }

    def _table(self, reference: Mapping[str, Any]) -> pa.Table:
        shard = self.opener.shard(reference)
        if shard is None:
            raise self._gone(str(reference["table"]))
        return shard.read(0, shard.num_rows).select(self.compared)

    def _gone(self, key: str) -> DatasetReleasedError:
        return DatasetReleasedError(
            f"The entry {key!r} of the version {self.record.get('fingerprint')!r} is gone or"
            " damaged (gc or a quarantine removed it): that version cannot be compared any more."
        )

    def row(self, position: int) -> dict[str, Any]:
        """Row ``position`` of the hashed rows, as a Python dict."""
        for table in self.tables:
            if position < table.num_rows:
                return table.slice(position, 1).to_pylist()[0]
            position -= table.num_rows
        raise IndexError(position)

    def close(self) -> None:
        self.opener.close()


def _match_shards(old: _Side, new: _Side) -> int:
    """Set aside the shards with an equal shard on the other side; how many pairs."""
    if old.whole or new.whole:
        return 0
    available = Counter(old.identities())
    matched: Counter[tuple[Any, ...]] = Counter()
    new_left: list[int] = []
    for index, identity in enumerate(new.identities()):
        if available[identity] > matched[identity]:
            matched[identity] += 1
        else:
            new_left.append(index)
    old_left: list[int] = []
    for index, identity in enumerate(old.identities()):
        if matched[identity]:
            matched[identity] -= 1
        else:
            old_left.append(index)
    old.unmatched, new.unmatched = old_left, new_left
    return len(new.references) - len(new_left)


def _compare(
    old: _Side,
    new: _Side,
    schema: SchemaChange,
    compared: tuple[str, ...],
    key: str | None,
    samples: int,
    unchanged: int,
) -> VersionDiff:
    removed, added = _unmatched(old.rows, new.rows)
    shown: dict[str, list[Any]] = {
        "added": [new.row(int(i)) for i in added[:samples]],
        "removed": [old.row(int(i)) for i in removed[:samples]],
    }
    changed_rows = 0
    if key is None:
        counts = {
            name: _replaced(old.columns[name][removed], new.columns[name][added])
            for name in compared
        }
    else:
        old_at, new_at = _pairs(old.columns[key][removed], new.columns[key][added], key)
        changed_rows = len(old_at)
        counts = {
            name: int(
                np.count_nonzero(
                    old.columns[name][removed][old_at] != new.columns[name][added][new_at]
                )
            )
            for name in compared
        }
        kept_removed = np.setdiff1d(np.arange(len(removed)), old_at)
        kept_added = np.setdiff1d(np.arange(len(added)), new_at)
        shown["changed"] = [
            {
                "key": new.row(int(added[j]))[key],
                "old": old.row(int(removed[i])),
                "new": new.row(int(added[j])),
            }
            for i, j in zip(old_at[:samples], new_at[:samples], strict=True)
        ]
        shown["added"] = [new.row(int(added[j])) for j in kept_added[:samples]]
        shown["removed"] = [old.row(int(removed[i])) for i in kept_removed[:samples]]
        removed, added = removed[kept_removed], added[kept_added]
    return VersionDiff(
        schema=schema,
        compared=compared,
        key=key,
        rows_added=len(added),
        rows_removed=len(removed),
        rows_changed=changed_rows,
        columns_changed={name: count for name, count in counts.items() if count},
        shards_unchanged=unchanged,
        shards_read=(len(old.unmatched), len(new.unmatched)),
        rows_hashed=len(old.rows) + len(new.rows),
        samples=shown if samples else {},
    )


def _unmatched(old: Hashes, new: Hashes) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Positions of the ``old`` hashes with no equal ``new`` one, and of the ``new`` without.

    A multiset difference: a hash twice in ``old`` and once in ``new`` leaves one
    of its ``old`` positions (its last occurrence) unmatched.
    """
    values, inverse = np.unique(np.concatenate([old, new]), return_inverse=True)
    in_old = np.bincount(inverse[: len(old)], minlength=len(values))
    in_new = np.bincount(inverse[len(old) :], minlength=len(values))
    return (
        np.flatnonzero(_occurrence(inverse[: len(old)]) >= in_new[inverse[: len(old)]]),
        np.flatnonzero(_occurrence(inverse[len(old) :]) >= in_old[inverse[len(old) :]]),
    )


def _occurrence(groups: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """For each element, how many equal elements come before it."""
    order = np.argsort(groups, kind="stable")
    ordered = groups[order]
    first = np.searchsorted(ordered, ordered, side="left")
    occurrence = np.empty(len(groups), np.int64)
    occurrence[order] = np.arange(len(groups)) - first
    return occurrence


def _replaced(old: Hashes, new: Hashes) -> int:
    """Values replaced in a column: the smaller of the two multiset differences."""
    gone, came = _unmatched(old, new)
    return int(min(len(gone), len(came)))


def _pairs(old: Hashes, new: Hashes, key: str) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Positions in ``old`` and ``new`` of the keys both have (each key unique on its side)."""
    for hashes, which in ((old, "old"), (new, "new")):
        values, counts = np.unique(hashes, return_counts=True)
        if len(values) != len(hashes):
            raise InvalidArgumentError(
                f"The key column {key!r} is not unique among the {which} version's rows that"
                f" changed ({int(counts.max())} rows share a value): give a column that"
                " identifies a row, or compare without --key."
            )
    _, old_at, new_at = np.intersect1d(old, new, assume_unique=True, return_indices=True)
    order = np.argsort(new_at, kind="stable")  # in the new version's row order
    return old_at[order], new_at[order]

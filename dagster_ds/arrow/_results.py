"""Running a transform through the cache: fingerprint it, look it up, build it once."""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from dagster_ds.arrow._changed_columns import (
    BASE_KEYS,
    ChangedColumnsSink,
    LayoutChanged,
    base_of,
    joined,
)
from dagster_ds.arrow._entries import TableSink, read_indices, read_table, write_indices
from dagster_ds.arrow._formatting import OutputFormat
from dagster_ds.arrow._shards import LazyTable, Shard, offsets
from dagster_ds.cache import CacheEntry, CacheStore, EntryWriter
from dagster_ds.errors import (
    CacheEntryDamagedError,
    CacheError,
    InvalidFingerprintError,
    SchemaMismatchError,
)
from dagster_ds.features import Features, arrow_type_to_feature
from dagster_ds.fingerprint import (
    HashNode,
    LineageStep,
    fingerprint_transform,
    generate_random_fingerprint,
    rebase_transform,
)

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset

_FINGERPRINT = re.compile(r"[0-9a-f]{32}")
#: The metadata item of an entry recording how long building it took, in seconds.
COMPUTE_SECONDS = "seconds"


@dataclass(frozen=True)
class Transform:
    """A transform about to run: its name, the fingerprint of its result, its hash tree.

    The tree is None when the transform could not be hashed and got a random
    fingerprint: such a result is computed every time and never reused.
    """

    name: str
    parents: tuple[str, ...]
    fingerprint: str
    tree: HashNode | None

    @property
    def reusable(self) -> bool:
        return self.tree is not None

    def for_shard(self, fingerprint: str, **values: str | int) -> Transform:
        """The same transform applied to one shard: its fingerprint rebased on the shard's."""
        if self.tree is None:
            return Transform(self.name, (fingerprint,), generate_random_fingerprint(), None)
        rebased = rebase_transform(self.tree, fingerprint, **values)
        return Transform(self.name, (fingerprint,), rebased, self.tree)

    def step(self) -> LineageStep:
        return LineageStep(self.name, self.fingerprint, self.parents)

    def metadata(self) -> dict[str, Any]:
        return {
            "transform": self.name,
            "parents": list(self.parents),
            "hash_tree": self.tree.to_dict() if self.tree is not None else None,
        }


def plan(
    parent: Dataset, name: str, args: Mapping[str, Any], new_fingerprint: str | None = None
) -> Transform:
    """Fingerprint ``name(parent, **args)``, or take the caller's ``new_fingerprint``."""
    parents = (parent.fingerprint,)
    if new_fingerprint is not None:
        if not _FINGERPRINT.fullmatch(new_fingerprint):
            raise InvalidFingerprintError(
                f"new_fingerprint={new_fingerprint!r} is not 32 lowercase hexadecimal "
                "characters; pass for example dagster_ds.Hasher.hash(<what identifies the result>)."
            )
        return given_transform(name, parents, new_fingerprint)
    fingerprint, tree = fingerprint_transform(parent.fingerprint, name, args)
    return Transform(name, parents, fingerprint, tree)


def given_transform(name: str, parents: tuple[str, ...], fingerprint: str) -> Transform:
    """The transform ``name`` under the fingerprint its caller chose (32 hex characters)."""
    if not _FINGERPRINT.fullmatch(fingerprint):
        raise InvalidFingerprintError(
            f"{name}: fingerprint {fingerprint!r} is not 32 lowercase hexadecimal characters; "
            "pass for example dagster_ds.Hasher.hash(<what identifies the result>)."
        )
    given = HashNode("fingerprint", "new fingerprint", fingerprint)
    tree = HashNode("transform", name, fingerprint, {"new fingerprint": given})
    return Transform(name, parents, fingerprint, tree)


def run(
    transform: Transform,
    build: Callable[[EntryWriter], Mapping[str, Any]],
    *,
    load_from_cache_file: bool = True,
    store: CacheStore | None = None,
) -> CacheEntry:
    """The cache entry of ``transform``, built by ``build(writer)`` unless already cached.

    ``build`` returns metadata to record (row count, features...). With
    ``load_from_cache_file=False`` an existing entry is replaced, unless it is
    in use, in which case the new result is kept under a random name.
    ``store``: where (default: the cache, `CacheStore()`).
    """
    store = store or CacheStore()
    if not transform.reusable:
        store = CacheStore(random_names=True)
    elif not load_from_cache_file and not store.remove(transform.fingerprint):
        existing = store.lookup(transform.fingerprint)
        if existing is not None:
            existing.close()
            store = CacheStore(random_names=True)

    def build_entry(writer: EntryWriter) -> None:
        # The transform's record (its hash tree) is made only when building: a hit
        # returns the stored one. Its compute time is what a later reuse saves.
        began = time.perf_counter()
        built = build(writer)
        seconds = round(time.perf_counter() - began, 6)
        writer.update_metadata({**transform.metadata(), **built, COMPUTE_SECONDS: seconds})

    return store.get_or_create(transform.fingerprint, build_entry)


def table_result(
    parent: Dataset | None,
    transform: Transform,
    write: Callable[[TableSink], None],
    features_for: Callable[[pa.Schema], Features],
    *,
    load_from_cache_file: bool = True,
    cls: type[Dataset] | None = None,
) -> Dataset:
    """A dataset of one shard that ``write(sink)`` produces, cached under the transform.

    ``features_for(schema)`` gives the result's features from the unified
    schema of everything written; ``cls``: as in `shards_result`.
    """
    shard = shard_table(transform, write, features_for, load_from_cache_file=load_from_cache_file)
    return shards_result(parent, transform, [shard], features=shard[1], cls=cls)


def indices_result(
    parent: Dataset,
    transform: Transform,
    compute: Callable[[], pa.Array],
    *,
    load_from_cache_file: bool = True,
) -> Dataset:
    """``parent`` seen through the logical positions ``compute()`` returns, cached."""
    mapping = parent._mapping  # pyright: ignore[reportPrivateUsage]

    def build(writer: EntryWriter) -> Mapping[str, Any]:
        positions = compute()
        logical = mapping.take(positions) if mapping is not None else positions
        write_indices(writer, logical)
        return {"kind": "indices", "num_rows": len(logical)}

    entry = run(transform, build, load_from_cache_file=load_from_cache_file)
    return parent._from_shards(  # pyright: ignore[reportPrivateUsage]
        parent,
        parent._shards,  # pyright: ignore[reportPrivateUsage]
        fingerprint=transform.fingerprint,
        mapping=read_indices(entry),
        mapping_entries=(*parent._mapping_entries, entry),  # pyright: ignore[reportPrivateUsage]
        step=transform.step(),
    )


def positions_entry(
    transform: Transform,
    compute: Callable[[], pa.Array | tuple[pa.Array, Mapping[str, Any]]],
    *,
    load_from_cache_file: bool = True,
    store: CacheStore | None = None,
) -> CacheEntry:
    """The entry of the positions ``compute()`` returns, cached under ``transform``.

    Positions among a shard's rows, whatever its physical layout; ``compute``
    may also return metadata to record with them (what its function read).
    ``store``: where (default: the cache).
    """

    def build(writer: EntryWriter) -> Mapping[str, Any]:
        computed = compute()
        positions, recorded = computed if isinstance(computed, tuple) else (computed, {})
        write_indices(writer, positions)
        return {**recorded, "kind": "indices", "num_rows": len(positions)}

    return run(transform, build, load_from_cache_file=load_from_cache_file, store=store)


def restricted_shard(
    shard: Shard,
    fingerprint: str,
    entry: CacheEntry,
    rebuild: Callable[[], pa.Array] | None = None,
) -> Shard:
    """``shard`` seen through the positions ``entry`` holds, as the shard ``fingerprint``.

    The positions are read when the rows are (their count is recorded).
    ``rebuild``: computes them again if ``entry`` is damaged or gone by then.
    """

    def kept() -> pa.Array:
        positions = read_or_rebuild(entry, read_indices, rebuild)
        before = shard.indices
        return before.take(positions) if before is not None else positions

    count = entry.metadata_item("num_rows")
    rows = LazyTable(count, kept) if isinstance(count, int) else kept()
    return Shard(fingerprint, shard.rows, rows, (*shard.entries, entry), shard.table_entry)


Read = TypeVar("Read", pa.Table, pa.Array)


def read_or_rebuild(
    entry: CacheEntry, read: Callable[[CacheEntry], Read], rebuild: Callable[[], Read] | None
) -> Read:
    """``read(entry)``; if the entry turns out damaged or gone, ``rebuild()`` instead.

    Raises:
        CacheEntryDamagedError: It is damaged or gone and there is no ``rebuild``.
    """
    try:
        return read(entry)
    except CacheEntryDamagedError as error:
        if rebuild is None:
            raise CacheEntryDamagedError(
                f"The cache entry {entry.key!r} ({entry.url!r}) was damaged or removed after "
                f"this dataset was opened, and this dataset cannot compute it again: {error} "
                "Load or compute the dataset again (its missing entries are then recomputed)."
            ) from error
        return rebuild()


def units(parent: Dataset) -> list[tuple[Shard, int]]:
    """What a row-local transform runs on, each with its first logical row.

    The shards, when the dataset has no mapping; otherwise the whole dataset
    as one piece, since a shuffled or sorted order crosses shards.
    """
    if parent._mapping is None:  # pyright: ignore[reportPrivateUsage]
        shards = parent._shards  # pyright: ignore[reportPrivateUsage]
        return list(zip(shards, offsets(shards), strict=False))
    whole = Shard(
        parent.fingerprint,
        parent.data,
        parent._indices,  # pyright: ignore[reportPrivateUsage]
        parent._entries,  # pyright: ignore[reportPrivateUsage]
    )
    return [(whole, 0)]


def shard_table(
    transform: Transform,
    write: Callable[[TableSink], Mapping[str, Any] | None],
    features_for: Callable[[pa.Schema], Features],
    *,
    load_from_cache_file: bool = True,
    store: CacheStore | None = None,
    base: Shard | None = None,
    rebuild: Callable[[], pa.Table] | None = None,
) -> tuple[Shard, Features]:
    """One output shard that ``write(sink)`` produces, cached under ``transform``; its features.

    ``store``: where (default: the cache). ``base``: the input shard, when the
    output may keep some of its columns as they are; if it is a whole cache
    entry, only the other columns are stored (see `_changed_columns`).
    ``rebuild``: computes the table again if its entry is damaged or gone when read.
    ``write`` may return metadata to record in the entry (what its function read).
    """
    store = store or CacheStore()
    base_entry = base.table_entry if base is not None and base.kept is None else None
    referencing = base_entry is not None and holds(store, base_entry)

    def build(writer: EntryWriter) -> Mapping[str, Any]:
        sink: Any = TableSink(writer)
        if referencing:
            sink = ChangedColumnsSink(sink)
        extra = write(sink)
        features = features_for(sink.close())
        # The list form keeps the column order (manifests are written with sorted keys).
        recorded: dict[str, Any] = {
            **(extra or {}),
            "kind": "table",
            "num_rows": sink.num_rows,
            "features": features.to_yaml_list(),
        }
        if isinstance(sink, ChangedColumnsSink) and base_entry is not None:
            recorded.update(sink.metadata(base_entry))
        return recorded

    def build_entry() -> CacheEntry:
        return run(transform, build, load_from_cache_file=load_from_cache_file, store=store)

    try:
        entry = build_entry()
    except LayoutChanged:  # the map kept other columns in other batches: store it whole
        referencing = False
        entry = build_entry()
    opened = open_table_shard(entry, store, base, rebuild)
    if opened is None:  # it keeps columns in a base entry that is gone: compute it whole
        entry.close()
        store.remove(transform.fingerprint, force=True)
        referencing = False
        opened = open_table_shard(build_entry(), store, rebuild=rebuild)
    if opened is None:
        raise CacheError(
            f"Could not store the shard {transform.fingerprint!r} in {store.root!r}: its entry "
            "changed as soon as it was written. Is another process cleaning the cache?"
        )
    return opened


def holds(store: CacheStore, entry: CacheEntry) -> bool:
    """Whether ``entry`` is an entry of ``store`` (it is held open, so it is still there)."""
    return store.holds(entry)


def open_table_shard(
    entry: CacheEntry,
    store: CacheStore,
    known: Shard | None = None,
    rebuild: Callable[[], pa.Table] | None = None,
) -> tuple[Shard, Features] | None:
    """The shard a table entry holds, and its features; its table is read on first use.

    ``known``: an open shard that may be the entry's base (see `base_of`).
    ``rebuild``: computes the table again if the entry turns out damaged or
    gone when read (without it, that raises `CacheEntryDamagedError`). None
    when the entry keeps some columns in a base entry that is gone, or whose
    rows do not match.
    """
    stored, expected = stored_features(json.dumps(entry.metadata_item("features")))
    features = Features(stored)  # the caller's own copy
    layout: dict[str, Any] | None = None
    base: Shard | None = None
    if entry.metadata_item("base") is not None:
        layout = {name: entry.metadata_item(name) for name in BASE_KEYS}
        base = base_of(layout, store, known)
        if base is None:
            return None
    num_rows = entry.metadata_item("num_rows")
    entries = (entry, *(base.entries if base is not None else ()))

    def open_rows() -> pa.Table:
        return read_or_rebuild(entry, read_rows, rebuild)

    def read_rows(opened: CacheEntry) -> pa.Table:
        table = read_table(opened)
        if layout is not None and base is not None:
            whole = joined(table, layout, base)
            if whole is None:
                raise damaged_entry(
                    entry, store, f"has other rows than its base {base.fingerprint!r}"
                )
            table = whole
        table = conformed_table(table, stored, expected)
        if isinstance(num_rows, int) and table.num_rows != num_rows:
            raise damaged_entry(
                entry, store, f"holds {table.num_rows} rows, its manifest {num_rows}"
            )
        return table

    if isinstance(num_rows, int):
        if base is not None and base.table_rows != num_rows:
            return None  # made from other rows than its base holds now: compute it again
        return Shard(
            entry.fingerprint, LazyTable(num_rows, open_rows), None, entries, entry
        ), features
    try:  # an entry of an earlier release, without its row count: read it now
        table = read_rows(entry)
    except CacheError:
        return None
    return Shard(entry.fingerprint, table, None, entries, entry), features


def lookup_table_shard(store: CacheStore, key: str) -> Shard | None:
    """The shard of ``store``'s table entry ``key``, held open; None if it is not usable."""
    entry = store.lookup(key)
    if entry is None:
        return None
    opened = open_table_shard(entry, store)
    if opened is None:
        entry.close()
        return None
    return opened[0]


def damaged_entry(entry: CacheEntry, store: CacheStore, what: str) -> CacheError:
    """The error for ``entry`` of ``store`` holding other rows than it says (``what``)."""
    return CacheError(
        f"The cache entry {entry.fingerprint!r} in {store.root!r} {what}: it is damaged. "
        f"Remove it (CacheStore({store.root!r}).remove({entry.fingerprint!r})) and run "
        "again to recompute it."
    )


@functools.lru_cache(maxsize=1024)
def stored_features(text: str) -> tuple[Features, pa.StructType]:
    """An entry's features (their YAML form as JSON text) and their row type, parsed once.

    Every cache hit reads its entry's: most entries of a dataset share them.
    """
    features = Features.from_yaml_list(json.loads(text))
    return features, features.type


def conformed_table(table: pa.Table, features: Features, expected: pa.StructType) -> pa.Table:
    """``table`` cast to ``features``' schema (row type ``expected``) if its types differ."""
    if table.schema.names == [field.name for field in expected] and all(
        column.type == field.type for column, field in zip(table.columns, expected, strict=True)
    ):
        return table
    return table.cast(features.arrow_schema)


def shards_result(
    parent: Dataset | None,
    transform: Transform,
    shards: Sequence[tuple[Shard, Features]],
    *,
    features: Features | None = None,
    cls: type[Dataset] | None = None,
) -> Dataset:
    """The dataset made of the output ``shards`` of ``transform`` (features merged unless given).

    It is of ``parent``'s class; ``cls`` is the class of a dataset made from
    nothing (``parent`` None: loaded files, a generator's rows).
    """
    made = type(parent) if parent is not None else cls
    assert made is not None, "a dataset without a parent needs its class (cls=...)"
    if features is None:
        features = merge_features([each for _, each in shards])
    dataset = made._from_shards(  # pyright: ignore[reportPrivateUsage]
        parent,
        [shard for shard, _ in shards],
        fingerprint=transform.fingerprint,
        features=features,
        step=transform.step() if parent is not None else None,
    )
    dataset._output_format = OutputFormat()  # pyright: ignore[reportPrivateUsage]
    return dataset


def merge_features(features: Sequence[Features]) -> Features:
    """The features of shards side by side, their Arrow types unified.

    An all-null column takes the others' type, int64 and float64 give float64;
    each column's feature is the first whose type is the unified one.
    """
    if all(each == features[0] for each in features[1:]):
        return features[0]
    try:
        unified = pa.unify_schemas(
            [each.arrow_schema for each in features], promote_options="permissive"
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
        raise SchemaMismatchError(
            f"The dataset's shards (one per data file) have columns of types that cannot be "
            f"combined: {error}. Make the files agree, or pass features=... to cast them all."
        ) from error
    merged: dict[str, Any] = {}
    for field in unified:
        merged[field.name] = next(
            (
                each[field.name]
                for each in features
                if field.name in each
                and each.arrow_schema.field(field.name).type.equals(field.type)
            ),
            None,
        ) or arrow_type_to_feature(field.type)
    return Features(merged)


def derived(
    parent: Dataset,
    transform: Transform,
    change: Callable[[pa.Table], pa.Table],
    features: Features,
) -> Dataset:
    """``parent`` with ``change`` (a zero-copy column operation) applied to each shard.

    Renames, removals and selections of columns need no cache: rows and mapping stay.
    """
    shards = [
        Shard(
            transform.for_shard(shard.fingerprint).fingerprint,
            change(shard.table),
            shard.kept,
            shard.entries,
        )
        for shard in parent._shards  # pyright: ignore[reportPrivateUsage]
    ]
    return parent._from_shards(  # pyright: ignore[reportPrivateUsage]
        parent,
        shards,
        fingerprint=transform.fingerprint,
        mapping=parent._mapping,  # pyright: ignore[reportPrivateUsage]
        mapping_entries=parent._mapping_entries,  # pyright: ignore[reportPrivateUsage]
        features=features,
        step=transform.step(),
    )

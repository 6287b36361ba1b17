"""Stored datasets: a small version manifest in a `CacheStore` that references shard entries.

A stored version is a cache entry with no files of its own: its metadata names,
for each shard, the entry holding the shard's table and, when the shard keeps
only some rows, the entry holding their positions; then the mapping, the
features, the split, the format and the lineage. A shard whose table already
is an entry of the same store is referenced (0 bytes copied); any other is
written once, through the same writer as every cache entry, under a key
derived from its fingerprint; a copy records what the entry it copies
recorded of its columns and its function's reads (`carried_metadata`). Every
guarantee of the cache (checksums, locks, leases, gc) therefore holds for
stored versions, and a version one of whose entries is damaged or gone does
not open: it is recomputed, never served.

The version's record embeds the manifest of every entry it references, and
their total size: opening a version reads one manifest (its own) whatever
its shard count, each shard's files being checked when they are read;
describing it or checking it is there reads nothing more. Versions of
earlier releases, without those manifests, open through a lookup per entry.

Each version also records its *content fingerprint*: xxh3 over the stored
Arrow buffers (independent of chunking) of each shard, with the positions
and mapping, so that two recipes producing the same rows share it.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import xxhash

from dagster_ds.arrow._column_reads import recorded_fingerprints
from dagster_ds.arrow._entries import TableSink, read_indices, write_indices
from dagster_ds.arrow._memory import release_unused
from dagster_ds.arrow._results import (
    Transform,
    holds,
    lookup_table_shard,
    open_table_shard,
    run,
    shard_table,
)
from dagster_ds.arrow._shards import LazyTable, Shard
from dagster_ds.arrow._streamed import stored_batches
from dagster_ds.cache import CacheEntry, CacheStore, EntryWriter
from dagster_ds.errors import CacheEntryDamagedError, CacheError
from dagster_ds.features import Features
from dagster_ds.fingerprint import (
    ColumnDigests,
    Hasher,
    HashNode,
    LineageStep,
    arrow_value_hash,
)

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset

VERSION_KIND = "stored-dataset"
_BATCH = 10_000
_content_memo: dict[tuple[str, str | None], str] = {}
_memo_lock = threading.Lock()


@dataclass(frozen=True)
class StoredVersion:
    """A stored dataset version: what it holds and what storing it cost.

    Attributes:
        content_fingerprint: xxh3 of the stored rows (the asset's data version).
        bytes_written: Bytes of data files this store call wrote, plus those of the
            entries it references that were written since ``written_since`` (the
            transforms that computed it); 0 when everything was stored before.
        size: Bytes of every data file the version references.
    """

    content_fingerprint: str
    bytes_written: int
    size: int


def adopt(store: CacheStore, dataset: Dataset) -> Dataset:
    """``dataset`` with every shard table in ``store``: tables of other stores copied once.

    What a dataset asset does with its inputs before its function runs, so
    that its transforms' results can reference their input's columns. The
    kept positions of a filter's output (an entry of another store recording
    what its function read) are copied too, under their own key and with their
    records, so that the filter's outputs are found in ``store`` as its own:
    by their key, and by their read columns (see `_column_reuse`).
    """
    shards: list[Shard] = []
    changed = False
    for shard in dataset._shards:  # pyright: ignore[reportPrivateUsage]
        adopted = _adopted_shard(store, shard)
        shards.append(adopted or shard)
        changed = changed or adopted is not None
    if not changed:
        return dataset
    return dataset._from_shards(  # pyright: ignore[reportPrivateUsage]
        dataset,
        shards,
        fingerprint=dataset.fingerprint,
        mapping=dataset._mapping,  # pyright: ignore[reportPrivateUsage]
        mapping_entries=dataset._mapping_entries,  # pyright: ignore[reportPrivateUsage]
    )


def _adopted_shard(store: CacheStore, shard: Shard) -> Shard | None:
    """``shard`` over entries of ``store`` (its table and transforms' positions); None: it is."""
    entry = shard.table_entry
    if entry is None:
        return None
    head: tuple[CacheEntry, ...] = shard.entries[:1]
    rows, table_entry = shard.rows, entry
    if not holds(store, entry):
        features = Features.from_yaml_list(entry.metadata["features"])  # type: ignore[arg-type]
        _copy_table(store, entry.key, shard.table, features, carried=carried_metadata(shard))
        copied = store.lookup(entry.key)
        opened = open_table_shard(copied, store) if copied is not None else None
        if opened is not None:
            head, rows, table_entry = opened[0].entries, opened[0].table, opened[0].table_entry
    rest = shard.entries[1:]
    positions = tuple(_adopted_positions(store, each) for each in rest)
    if table_entry is entry and all(a is b for a, b in zip(positions, rest, strict=True)):
        return None
    return Shard(shard.fingerprint, rows, shard.indices, (*head, *positions), table_entry)


def _adopted_positions(store: CacheStore, entry: CacheEntry) -> CacheEntry:
    """A transform's kept positions ``entry``, copied into ``store`` with its records.

    Only the outputs of filters that recorded their reads (others: ``entry``
    itself, referenced or stored by the version as before).
    """
    recorded = entry.metadata
    if recorded.get("kind") != "indices" or "column_reads" not in recorded or holds(store, entry):
        return entry

    def build(writer: EntryWriter) -> Mapping[str, Any]:
        write_indices(writer, read_indices(entry))
        return dict(recorded)

    tree = HashNode("stored", "stored rows", entry.key)
    return run(Transform("store", (), entry.key, tree), build, store=store)


def derived_key(kind: str, fingerprint: str) -> str:
    """A store key for something derived from ``fingerprint`` (``kind`` tells what)."""
    return xxhash.xxh3_128_hexdigest(f"{kind}\0{fingerprint}".encode())


def store_version(
    store: CacheStore,
    key: str,
    dataset: Dataset,
    *,
    metadata: Mapping[str, Any] | None = None,
    previous: Mapping[str, Any] | None = None,
    written_since: datetime.datetime | None = None,
    hash_content: bool = True,
) -> StoredVersion:
    """Store ``dataset`` in ``store`` under ``key``; reference what the store already holds.

    An existing version under ``key`` that still opens is kept as it is (a
    damaged one is replaced). ``previous``: an earlier version's record, whose
    content fingerprints of shared shards are reused instead of recomputed.
    ``written_since``: count the referenced entries created since then (by the
    transforms that computed ``dataset``) in ``bytes_written``. ``hash_content``:
    False records the recipe fingerprint as the content fingerprint, reading no rows
    (for a record that only makes the dataset quick to open, like a loaded source's).
    """
    if store.manifest(key) is not None:  # (one read when absent, as mostly)
        if open_version(store, key, cls=type(dataset)) is not None:
            return describe_version(store, key)
        store.remove(key, force=True)
    known = known_contents(previous)
    manifests = _held_manifests(store, dataset)
    written = 0
    shards: list[dict[str, Any]] = []
    contents: list[str | None] = []
    for shard in dataset._shards:  # pyright: ignore[reportPrivateUsage]
        reference, cost = _store_shard(
            store, shard, dataset.features, known if hash_content else None, manifests
        )
        written += cost
        shards.append(reference)
        contents.append(reference["content"])
    mapping_key = None
    mapping = dataset._mapping  # pyright: ignore[reportPrivateUsage]
    if mapping is not None:
        mapping_key = derived_key("stored-mapping", dataset.fingerprint)
        written += _store_indices(store, mapping_key, mapping, manifests)
        contents.append(Hasher.hash(mapping))
    content = (
        Hasher.hash({"shards": contents, "features": dataset.features.to_dict()})
        if hash_content
        else dataset.fingerprint
    )
    record: dict[str, Any] = {
        "kind": VERSION_KIND,
        "fingerprint": dataset.fingerprint,
        "content_fingerprint": content,
        "features": dataset.features.to_yaml_list(),
        "num_rows": len(dataset),
        "split": dataset.split,
        "format": dataset._output_format.as_dict(),  # pyright: ignore[reportPrivateUsage]
        "lineage": [step.to_dict() for step in dataset.lineage],
        "shards": shards,
        "mapping": mapping_key,
        **dict(metadata or {}),
    }
    embedded = _embedded(store, referenced_keys(record), manifests)
    record[ENTRIES] = embedded
    record[SIZE] = _total_size(embedded.values())
    with store.get_or_create(key, lambda writer: writer.update_metadata(record)) as version:
        stored = version.metadata
    if written_since is not None:
        written += _bytes_created_since(dataset, written_since)
    return _described_record(store, stored, written)


#: The record item embedding the manifest of each entry a version references, by key.
ENTRIES = "entries"
#: The record item holding the bytes of every data file the version references.
SIZE = "size"


def _held_manifests(store: CacheStore, dataset: Dataset) -> dict[str, dict[str, Any]]:
    """The manifests of the entries of ``store`` that ``dataset`` holds open, by key."""
    held = [
        *(entry for shard in dataset._shards for entry in shard.entries),  # pyright: ignore[reportPrivateUsage]
        *dataset._mapping_entries,  # pyright: ignore[reportPrivateUsage]
    ]
    return {entry.key: entry.manifest for entry in held if holds(store, entry)}


def _embedded(
    store: CacheStore, keys: Sequence[str], manifests: Mapping[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The manifest of each entry ``keys`` name: known, else read (one read each)."""
    embedded: dict[str, dict[str, Any]] = {}
    for key in keys:
        manifest = manifests.get(key)
        if manifest is None:
            read = store.manifest(key)
            if read is None:
                raise RuntimeError(
                    f"The entry {key!r} of {store.root!r} vanished while a version referencing"
                    " it was being stored: run again to compute it."
                )
            manifest = dict(read.to_json())
        embedded[key] = manifest
    return embedded


def _total_size(manifests: Collection[Mapping[str, Any]]) -> int:
    return sum(int(file["size"]) for manifest in manifests for file in manifest["files"])


def _bytes_created_since(dataset: Dataset, since: datetime.datetime) -> int:
    """Bytes of the data files of ``dataset``'s open entries created at ``since`` or later."""
    entries = {
        entry.key: entry.manifest
        for shard in dataset._shards  # pyright: ignore[reportPrivateUsage]
        for entry in shard.entries
    }
    return sum(
        sum(int(file["size"]) for file in manifest["files"])  # pyright: ignore
        for manifest in entries.values()
        if datetime.datetime.fromisoformat(str(manifest["created"])) >= since
    )


def open_version(store: CacheStore, key: str, *, cls: type[Dataset]) -> Dataset | None:
    """The dataset stored under ``key``, memory-mapped; None if absent, damaged or partial.

    The dataset is a ``cls``: `Dataset`, which this module is below and does not import.
    Damaged entries are quarantined with a `CacheCorruptionWarning` by the store; a
    version one of whose entries is found damaged or gone is removed.
    """
    version = store.lookup(key)
    if version is None:
        return None
    record = version.metadata
    if record.get("kind") != VERSION_KIND:
        version.close()
        return None
    features = Features.from_yaml_list(record["features"])  # type: ignore[arg-type]
    opener = _Opener(store, record)
    shards: list[Shard] = []
    entries: list[CacheEntry] = [version]
    mapping = None
    try:
        for reference in record["shards"]:  # type: ignore[union-attr]
            shard = opener.shard(reference)  # type: ignore[arg-type]
            if shard is None:
                return opener.fail(version)
            shards.append(shard)
        if isinstance(record.get("mapping"), str):
            mapping_entry = opener.entry(str(record["mapping"]))
            if mapping_entry is None:
                return opener.fail(version)
            mapping = read_indices(mapping_entry)
            entries.append(mapping_entry)
        if not opener.intact():
            return opener.fail(version)
    except CacheEntryDamagedError:  # an entry it names is gone or damaged: it is stale
        opener.fail(version)
        store.remove(key, force=True)
        return None
    dataset = cls._from_shards(  # pyright: ignore[reportPrivateUsage]
        None,
        shards,
        fingerprint=str(record["fingerprint"]),
        mapping=mapping,
        mapping_entries=entries,
        features=features,
    )
    dataset._split = record.get("split")  # type: ignore[assignment] # pyright: ignore[reportPrivateUsage]
    output = record.get("format")
    if isinstance(output, dict):
        from dagster_ds.arrow._formatting import OutputFormat

        dataset._output_format = OutputFormat.create(  # pyright: ignore[reportPrivateUsage]
            output.get("type"),  # type: ignore[arg-type]
            output.get("columns"),  # type: ignore[arg-type]
            bool(output.get("output_all_columns", False)),
            **dict(output.get("format_kwargs") or {}),  # type: ignore[arg-type]
        )
    lineage = record.get("lineage")
    dataset._lineage = tuple(  # pyright: ignore[reportPrivateUsage]
        LineageStep.from_dict(step)  # type: ignore[arg-type]
        for step in (lineage if isinstance(lineage, list) else [])
    )
    return dataset


def describe_version(store: CacheStore, key: str) -> StoredVersion:
    """What is stored under ``key`` (nothing written)."""
    return _described(store, key, 0)


def version_record(store: CacheStore, key: str) -> dict[str, Any] | None:
    """The manifest record of the version under ``key``, or None (one manifest read).

    What the version records, not that its data is intact: `open_version` checks that.
    """
    manifest = store.manifest(key)
    if manifest is None:
        return None
    record = dict(manifest.metadata)
    return record if record.get("kind") == VERSION_KIND else None


def recorded_entries(store: CacheStore, key: str | None) -> dict[str, dict[str, Any]]:
    """The manifests the version under ``key`` embeds, by entry key (empty if none).

    One manifest read (none when ``key`` is None): hints for `CacheStore.recorded`.
    """
    record = version_record(store, key) if key is not None else None
    embedded = record.get(ENTRIES) if record is not None else None
    if not isinstance(embedded, dict):
        return {}
    return {k: v for k, v in embedded.items() if isinstance(k, str) and isinstance(v, dict)}


def referenced_keys(record: Mapping[str, Any]) -> list[str]:
    """Every entry key a version record references."""
    keys: list[str] = []
    for reference in record.get("shards", []):
        keys.append(reference["table"])
        keys.extend(reference.get("bases") or [])
        if reference.get("rows"):
            keys.append(reference["rows"])
    if record.get("mapping"):
        keys.append(record["mapping"])
    return keys


def _described(store: CacheStore, key: str, written: int) -> StoredVersion:
    """The version as its manifest records it: one read, nothing verified.

    Callers have just stored or opened (verified) the version. A version of an
    earlier release, which records no size, also reads each entry's manifest.
    """
    version = store.manifest(key)
    if version is None:
        raise RuntimeError(f"The stored version {key!r} vanished right after being stored.")
    return _described_record(store, version.metadata, written)


def _described_record(store: CacheStore, record: Mapping[str, Any], written: int) -> StoredVersion:
    """The version ``record`` describes (`_described`, its manifest already read)."""
    size = record.get(SIZE)
    if not isinstance(size, int):
        size = 0
        for reference_key in referenced_keys(record):
            referenced = store.manifest(reference_key)
            if referenced is not None:
                size += referenced.size
    return StoredVersion(str(record["content_fingerprint"]), written, size)


def version_intact(store: CacheStore, key: str, *, cls: type[Dataset]) -> bool:
    """Whether the version under ``key`` is stored and its entries look intact.

    One manifest read, then `CacheStore.check_entries` over the entries its
    record embeds (a stat per file locally, nothing on object stores: files are
    checked when read). A damaged entry is quarantined (warning) and the
    version counts as absent. A version of an earlier release is opened instead.
    """
    version = store.lookup(key)
    if version is None:
        return False
    with version:
        record = version.metadata
    if record.get("kind") != VERSION_KIND:
        return False
    embedded = record.get(ENTRIES)
    if not isinstance(embedded, dict):
        dataset = open_version(store, key, cls=cls)
        if dataset is None:
            return False
        for entry in dataset._entries:  # pyright: ignore[reportPrivateUsage]
            entry.close()
        return True
    opener = _Opener(store, record)
    entries = [opener.entry(reference) for reference in referenced_keys(record)]
    try:
        return all(entry is not None for entry in entries) and opener.intact()
    finally:
        opener.close()


def _store_shard(
    store: CacheStore,
    shard: Shard,
    features: Features,
    known: Mapping[tuple[str, str | None], str] | None,
    manifests: dict[str, dict[str, Any]],
) -> tuple[dict[str, Any], int]:
    """The reference to ``shard`` in ``store``, writing what it lacks; and the bytes written.

    ``known``: content fingerprints computed before, by (table, rows); None: hash nothing.

    A shard over a whole table entry references that entry (copied once if it
    lives in another store) and stores its row positions if it has any; any
    other shard (renamed, sliced, built in memory) has its rows written once.
    """
    written = 0
    rows_key = None
    if shard.table_entry is not None:
        table_key = shard.table_entry.key
        if not holds(store, shard.table_entry):
            carried = carried_metadata(shard)
            written += _copy_table(store, table_key, shard.table, features, manifests, carried)
        # Its positions are read only if they must be stored (not a filter's own entry).
        if shard.kept is not None:
            rows_key = _rows_entry(store, shard)
            if rows_key is None and (indices := shard.indices) is not None:
                rows_key = derived_key("stored-rows", shard.fingerprint)
                written += _store_indices(store, rows_key, indices, manifests)
    else:
        table_key = derived_key("stored-table", shard.fingerprint)
        written += _copy_table(store, table_key, shard, features, manifests)
    content = (
        None
        if known is None
        else known.get((table_key, rows_key)) or _content(store, shard, table_key, rows_key)
    )
    reference = {
        "fingerprint": shard.fingerprint,
        "table": table_key,
        "bases": _bases(store, table_key, manifests),
        "rows": rows_key,
        "num_rows": shard.num_rows,
        "content": content,
    }
    return reference, written


def _rows_entry(store: CacheStore, shard: Shard) -> str | None:
    """The key of an entry of ``store`` among the shard's holding exactly its rows (a filter's).

    The entry named by the shard's fingerprint holds them by construction (the
    transform that made the shard wrote it): nothing is read. Others are compared.
    """
    for entry in shard.entries:
        if (
            entry.key == shard.fingerprint
            and entry.metadata_item("kind") == "indices"
            and entry.metadata_item("num_rows") == shard.num_rows
            and holds(store, entry)
        ):
            return entry.key
    kept = shard.indices
    for entry in reversed(shard.entries):
        if entry.metadata.get("kind") != "indices" or not holds(store, entry):
            continue
        if kept is not None and kept.equals(read_indices(entry)):
            return entry.key
    return None


def _bases(store: CacheStore, key: str, manifests: dict[str, dict[str, Any]]) -> list[str]:
    """The entries whose columns the table entry ``key`` keeps (see `_changed_columns`).

    Read from the ``manifests`` known (one manifest read for each other one, kept there).
    """
    bases: list[str] = []
    while True:
        manifest: dict[str, Any] | None = manifests.get(key)
        if manifest is None:
            read = store.manifest(key)
            if read is None:
                return bases
            manifest = manifests[key] = dict(read.to_json())
        base = manifest["metadata"].get("base")
        if not isinstance(base, str) or base in bases:
            return bases
        bases.append(base)
        key = base


#: What a table entry records of the function that made it (`_column_reads`):
#: true of its rows wherever they are stored.
CARRIED = ("column_reads", "read_fingerprints", "written", "column_key")


def carried_metadata(shard: Shard) -> dict[str, Any]:
    """What a copy of ``shard``'s table entry records as the entry did (read from no file).

    The items of `CARRIED`, and the column fingerprints: the entry's own, and
    for the columns it keeps in its base entry (see `_changed_columns`) the
    base's, as the copy holds every column itself.
    """
    entry = shard.table_entry
    if entry is None:
        return {}
    recorded = entry.metadata
    carried: dict[str, Any] = {name: recorded[name] for name in CARRIED if name in recorded}
    fingerprints = recorded_fingerprints(entry, {each.key: each for each in shard.entries})
    if fingerprints:
        carried["column_fingerprints"] = fingerprints
    return carried


def _copy_table(
    store: CacheStore,
    key: str,
    rows: pa.Table | Shard,
    features: Features,
    manifests: dict[str, dict[str, Any]] | None = None,
    carried: Mapping[str, Any] | None = None,
) -> int:
    """Write ``rows`` (a table, or a shard's rows) as a table entry under ``key``, once.

    ``carried``: metadata of the entry the rows are copied from (`carried_metadata`),
    recorded in the copy verbatim, so that the copy's column fingerprints and reads
    are known without hashing them again (see `_column_reads`).

    Returns the bytes this call wrote: 0 when the entry existed, or another
    process wrote it first. The entries' manifests are added to ``manifests``.
    """
    built: list[bool] = []

    def write(sink: TableSink) -> Mapping[str, Any]:
        built.append(True)
        total = rows.num_rows
        for start in range(0, total, _BATCH):
            stop = min(start + _BATCH, total)
            if isinstance(rows, Shard):
                sink.write(rows.read(start, stop))
            else:
                sink.write(rows.slice(start, stop - start))
        if sink.num_rows == 0:
            sink.write(features.arrow_schema.empty_table())
        return dict(carried or {})

    transform = Transform("store", (), key, HashNode("stored", "stored rows", key))
    shard, _ = shard_table(transform, write, lambda _schema: features, store=store)
    size = sum(entry.size for entry in shard.entries)
    for entry in shard.entries:
        if manifests is not None:
            manifests[entry.key] = entry.manifest
        entry.close()
    return size if built else 0


def _store_indices(
    store: CacheStore, key: str, indices: pa.Array, manifests: dict[str, dict[str, Any]]
) -> int:
    """Write row positions as an entry under ``key``, once; the bytes this call wrote."""
    built: list[bool] = []

    def build(writer: EntryWriter) -> Mapping[str, Any]:
        built.append(True)
        write_indices(writer, indices)
        return {"kind": "indices", "num_rows": len(indices)}

    transform = Transform("store", (), key, HashNode("stored", "stored rows", key))
    with run(transform, build, store=store) as entry:
        manifests[entry.key] = entry.manifest
        return entry.size if built else 0


class _Opener:
    """Opens the entries a version record references: from the manifests it embeds.

    Each entry is opened once (shards share base entries); a record of an
    earlier release, without embedded manifests, has each entry looked up.
    """

    def __init__(self, store: CacheStore, record: Mapping[str, Any]) -> None:
        self._store = store
        embedded = record.get(ENTRIES)
        self._manifests: Mapping[str, Any] | None = embedded if isinstance(embedded, dict) else None
        self._entries: dict[str, CacheEntry | None] = {}
        self._tables: dict[str, Shard | None] = {}

    def entry(self, key: str) -> CacheEntry | None:
        """The entry under ``key``: from its embedded manifest (no read), else looked up."""
        if key not in self._entries:
            manifest = self._manifests.get(key) if self._manifests is not None else None
            self._entries[key] = (
                self._store.known_entry(key, manifest)
                if isinstance(manifest, dict)
                else self._store.lookup(key)
            )
        return self._entries[key]

    def table(self, key: str) -> Shard | None:
        """The shard of the table entry ``key``, its base (if any) opened through ``self``."""
        if key not in self._tables:
            self._tables[key] = None  # a base cycle opens as absent
            if self._manifests is None:
                self._tables[key] = lookup_table_shard(self._store, key)
            else:
                self._tables[key] = self._embedded_table(key)
        return self._tables[key]

    def _embedded_table(self, key: str) -> Shard | None:
        entry = self.entry(key)
        if entry is None:
            return None
        base_key = entry.metadata_item("base")
        base = self.table(base_key) if isinstance(base_key, str) else None
        if isinstance(base_key, str) and base is None:
            return None
        opened = open_table_shard(entry, self._store, base)
        return opened[0] if opened is not None else None

    def shard(self, reference: Mapping[str, Any]) -> Shard | None:
        """The shard a version's ``reference`` names; None if an entry of it is gone."""
        table = self.table(str(reference["table"]))
        if table is None:
            return None
        fingerprint = str(reference["fingerprint"])
        if not reference.get("rows"):
            return Shard(fingerprint, table.rows, None, table.entries, table.table_entry)
        rows_entry = self.entry(str(reference["rows"]))
        if rows_entry is None:
            return None
        rows = read_indices(rows_entry)
        return Shard(fingerprint, table.rows, rows, (*table.entries, rows_entry), table.table_entry)

    def intact(self) -> bool:
        """Whether the entries opened from embedded manifests look intact (see check_entries)."""
        if self._manifests is None:
            return True
        return self._store.check_entries([e for e in self._entries.values() if e is not None])

    def close(self) -> None:
        """Release every entry opened."""
        for entry in self._entries.values():
            if entry is not None:
                entry.close()
        for shard in self._tables.values():
            for entry in shard.entries if shard is not None else ():
                entry.close()

    def fail(self, version: CacheEntry) -> None:
        """Release everything opened and the version itself: it does not open."""
        self.close()
        version.close()


def _content(store: CacheStore, shard: Shard, table_key: str, rows_key: str | None) -> str:
    """The content fingerprint of a shard's rows, remembered per (table, rows) in-process.

    A whole shard whose table is not open yet is hashed a record batch at a time,
    as its entry's files are read (`stored_batches`): storing a dataset holds one
    batch, not one shard, on an object store. Any other is hashed from a table opened
    for that alone and dropped at once.
    """
    memo_key = (table_key, rows_key)
    with _memo_lock:
        known = _content_memo.get(memo_key)
    if known is not None:
        return known
    digest = _streamed_content(store, shard)
    if digest is None:
        hashed, opened = _unkept(store, shard)
        try:
            digest = Hasher.hash(hashed.read(0, shard.num_rows))
        finally:
            for entry in opened:
                entry.close()
    release_unused()
    with _memo_lock:
        _content_memo[memo_key] = digest
    return digest


def _streamed_content(store: CacheStore, shard: Shard) -> str | None:
    """The content fingerprint of a whole shard not open yet, hashed batch by batch.

    None when the shard keeps some rows only, is open already, is not an entry of
    ``store``, or its batches cannot be hashed apart (no rows, or files of several
    schemas, which reading whole unifies); or when a file turns out damaged: the
    shard is then read whole, which says so as it always has.
    """
    if not _unopened_entry(store, shard) or shard.table_entry is None:
        return None
    try:
        batches = stored_batches(shard.table_entry, store)
        if batches is None:
            return None
        digests = ColumnDigests()
        schema: pa.Schema | None = None
        for batch in batches:
            schema = batch.schema if schema is None else schema
            if not batch.schema.equals(schema):
                return None
            digests.feed(batch)
    except CacheError:
        return None
    digest = digests.table_hexdigest(schema) if schema is not None else None
    return arrow_value_hash(digest) if digest is not None else None


def _unopened_entry(store: CacheStore, shard: Shard) -> bool:
    """Whether ``shard`` is all of its table entry's rows, in ``store``, not read yet."""
    rows = shard.rows
    return (
        shard.kept is None
        and isinstance(rows, LazyTable)
        and rows._table is None  # pyright: ignore[reportPrivateUsage]
        and shard.table_entry is not None
        and holds(store, shard.table_entry)
    )


def _unkept(store: CacheStore, shard: Shard) -> tuple[Shard, tuple[CacheEntry, ...]]:
    """``shard``, or its rows through a new `LazyTable` if its own is not open yet.

    Opening the shard's own table would keep it for the shard's lifetime. Also
    returns the entries opened for the new one (its bases), to close after use.
    """
    rows = shard.rows
    opened = not isinstance(rows, LazyTable) or rows._table is not None  # pyright: ignore[reportPrivateUsage]
    if opened or shard.table_entry is None or not holds(store, shard.table_entry):
        return shard, ()
    fresh = open_table_shard(shard.table_entry, store)
    if fresh is None:
        return shard, ()
    # Its first entry is the shard's own, which stays held; the others are its bases.
    return Shard(shard.fingerprint, fresh[0].rows, shard.indices), fresh[0].entries[1:]


def known_contents(record: Mapping[str, Any] | None) -> dict[tuple[str, str | None], str]:
    """The content fingerprints an earlier version ``record`` computed, by (table, rows)."""
    if record is None:
        return {}
    return {
        (reference["table"], reference.get("rows")): reference["content"]
        for reference in record.get("shards", [])
        if reference.get("content")
    }


def shard_keys(records: Sequence[Mapping[str, Any]]) -> set[str]:
    """Every entry key the version ``records`` reference."""
    return {key for record in records for key in referenced_keys(record)}


@dataclass(frozen=True)
class Retention:
    """What `retain` removed and kept.

    Attributes:
        removed_versions: Keys of the version manifests removed.
        removed_entries: Keys of the shard entries removed (used by no kept version).
        kept_versions: Keys of the versions kept.
    """

    removed_versions: tuple[str, ...]
    removed_entries: tuple[str, ...]
    kept_versions: tuple[str, ...]


def all_versions(store: CacheStore) -> list[dict[str, Any]]:
    """Every version record of the store, newest first, each with its entry ``key``."""
    found = [
        {**info.metadata, "key": info.fingerprint, "created": info.created.isoformat()}
        for info in store.ls()
        if info.metadata.get("kind") == VERSION_KIND
    ]
    return sorted(found, key=lambda record: str(record["created"]), reverse=True)


def retain(
    store: CacheStore,
    keep_versions: int,
    *,
    pinned: Collection[str] = (),
    assets: Collection[str] | None = None,
    partitions: Collection[str] | None = None,
) -> Retention:
    """Keep the newest ``keep_versions`` versions of each asset (partition), and every ``pinned``.

    Older versions go, with the entries only they referenced; a version or
    entry that a live process holds open stays (reader leases). ``assets``:
    only these assets' versions are considered (default: all); ``partitions``:
    only these partitions of them (default: all). Each partition of an asset
    keeps its own ``keep_versions``.
    """
    if keep_versions < 1:
        raise ValueError(f"keep_versions={keep_versions!r} must be at least 1")
    records = all_versions(store)
    seen: dict[tuple[str, str | None], int] = {}
    kept: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    for record in records:
        asset = str(record.get("asset"))
        partition = record.get("partition")
        group = (asset, partition if isinstance(partition, str) else None)
        seen[group] = seen.get(group, 0) + 1
        considered = (assets is None or asset in assets) and (
            partitions is None or group[1] in partitions
        )
        if not considered or seen[group] <= keep_versions or record["key"] in pinned:
            kept.append(record)
        else:
            dropped.append(record)
    removed_versions = [record["key"] for record in dropped if store.remove(record["key"])]
    still_used = shard_keys(
        kept + [record for record in dropped if record["key"] not in removed_versions]
    )
    candidates = shard_keys([r for r in dropped if r["key"] in removed_versions]) - still_used
    removed_entries = [key for key in sorted(candidates) if store.remove(key)]
    return Retention(
        tuple(removed_versions),
        tuple(removed_entries),
        tuple(record["key"] for record in kept),
    )


def kept_entries(store: CacheStore, versions: Collection[str]) -> set[str]:
    """The keys of the versions ``versions`` and of every entry they reference."""
    records = [record for record in all_versions(store) if record["key"] in versions]
    return {*versions, *shard_keys(records)}

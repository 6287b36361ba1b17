"""A loaded source as a stored version: an unchanged source opens with one listing and one read.

Loading data files caches each file's table under the fingerprint of its
content (remote files: the ETags of the listing), which `load_dataset` looks up
file by file. A dataset source also stores the loaded split as a version (see
`store_version`), keyed by the split's fingerprint and embedding its entries'
manifests: the next load lists the files, fingerprints them from the listing
and opens that version with one read, however many files there are. When the
files changed (one appended), the source's ref names the version stored last:
its entries, those of the groups of files that did not change, open from its
record (two reads), so a load costs what changed, not one read per group. Anything
but plain data files of a known format (a Hub repository, a folder, reader
options that change the columns or rows) is loaded as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dagster_ds.arrow import (
    Dataset,
    Transform,
    derived_key,
    file_transforms,
    open_version,
    recorded_entries,
    retain,
    split_fingerprint,
    store_version,
)
from dagster_ds.cache import CacheStore
from dagster_ds.formats import FORMATS, ResolvedFile, resolve_data_files
from dagster_ds.streaming import IterableDataset

if TYPE_CHECKING:
    from dagster_ds.orchestration.source import _SourceSpec  # pyright: ignore[reportPrivateUsage]

# Reader options that load_dataset takes as arguments of its own (they change the split).
_ARGUMENTS = frozenset(
    {"features", "columns", "filters", "cache_dir", "keep_in_memory", "shard_bytes"}
)


def source_fingerprint(spec: _SourceSpec) -> str | None:
    """The fingerprint `load_dataset` gives the source's split, from its listing alone.

    None when the source is not plain data files of a known format (then only
    loading it tells).
    """
    found = source_files(spec)
    return split_fingerprint(found[1]) if found is not None else None


def source_files(spec: _SourceSpec) -> tuple[list[ResolvedFile], list[Transform]] | None:
    """The source's data files and each one's load (fingerprinted from the listing).

    None when the source is not plain data files of a known format.
    """
    data_files = spec.data_files
    plain = (
        spec.path in FORMATS
        and data_files is not None
        and spec.data_dir is None
        and spec.name is None
        and spec.revision is None
        and not spec.streaming
        and not _ARGUMENTS & set(spec.reader_options)
    )
    if not plain or data_files is None:
        return None
    resolved = resolve_data_files(data_files, storage_options=spec.storage_options)
    files = resolved.get(spec.split)
    if not files:
        return None  # loading says what is missing
    options = dict(spec.reader_options)
    transforms = file_transforms(
        files, spec.path, None, None, None, options, spec.storage_options, None
    )
    return files, transforms


def load_source(spec: _SourceSpec, keep_versions: int | None = None) -> Dataset | IterableDataset:
    """The source's split, from its stored version when the files did not change.

    Runs where loads go (the run's dataset store, see `cache_root`). A version
    is stored only when the fingerprint computed from the listing is the one
    loading gave, so a stored one is exactly what loading would return.
    ``keep_versions``: after storing one, keep this many of the source's versions
    (the newest), as `DatasetIOManager` does for assets. A partition of a
    partitioned source (`for_partition`) has versions of its own, kept and counted
    by ``keep_versions`` apart from the other partitions'.
    """
    return load_sources([spec], keep_versions)[0]


def load_sources(
    specs: Sequence[_SourceSpec], keep_versions: int | None = None
) -> list[Dataset | IterableDataset]:
    """Each of ``specs`` as `load_source` loads it (say, partitions of one source).

    Retention, which reads every version record of the store, runs once for the
    versions stored here, not once per version stored.
    """
    store = CacheStore()
    loaded: list[Dataset | IterableDataset] = []
    stored: dict[str, _SourceSpec] = {}
    for spec in specs:
        dataset, key = _load(store, spec)
        loaded.append(dataset)
        if key is not None:
            stored[key] = spec
    if keep_versions is not None and stored:
        partitions = {spec.partition for spec in stored.values()}
        retain(
            store,
            keep_versions,
            pinned=set(stored),
            assets={spec.asset for spec in stored.values()},
            partitions=None if None in partitions else {str(p) for p in partitions},
        )
    return loaded


def _load(store: CacheStore, spec: _SourceSpec) -> tuple[Dataset | IterableDataset, str | None]:
    """The source loaded, and the key of the version stored now (None: none stored now).

    Loaded from its stored version when there is one, or as stored.
    """
    with spec.naming_missing_files():
        fingerprint = source_fingerprint(spec)
    if fingerprint is None:
        return spec.load(), None
    key = source_version_key(spec, fingerprint)
    stored = open_version(store, key, cls=Dataset)
    if stored is not None:
        return stored, None
    # The version stored last names the entries of the groups of files that did not change.
    latest = latest_version_ref(spec)
    with store.recorded(recorded_entries(store, store.ref(latest))):
        dataset = spec.load()
    if not isinstance(dataset, Dataset) or dataset.fingerprint != fingerprint:
        return dataset, None
    partition = {} if spec.partition is None else {"partition": spec.partition}
    metadata = {"asset": spec.asset, **partition}
    store_version(store, key, dataset, metadata=metadata, hash_content=False)
    store.set_ref(latest, key)
    # As stored: the assets reading it record this version, to name its changed columns.
    return open_version(store, key, cls=Dataset) or dataset, key


def source_version_key(spec: _SourceSpec, fingerprint: str) -> str:
    """The store key of the source's (partition's) version loaded with ``fingerprint``."""
    return derived_key(f"source-version\0{_of_partition(spec)}", fingerprint)


def latest_version_ref(spec: _SourceSpec) -> str:
    """The ref naming the source's (partition's) version stored last."""
    return derived_key("source-latest", _of_partition(spec))


def _of_partition(spec: _SourceSpec) -> str:
    """The source's name, and its partition's: what its versions are kept by."""
    return spec.asset if spec.partition is None else f"{spec.asset}\0{spec.partition}"

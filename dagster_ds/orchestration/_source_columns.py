"""The columns of a dataset source's next version, said before it is loaded (for the plan).

A source whose files changed since its last load has no stored version yet, so
nothing records its columns' fingerprints: the plan could not say which of them
changed (`column_changes`) nor what its readers will reuse by their read
columns (`planned_column_reuse`). Here its files are grouped into shards as
loading groups them (`file_groups`): a group whose load the store holds (its
files unchanged) gives the column fingerprints its entry recorded, as the
source's last version embeds them (one record, whatever the number of shards;
the entry's manifest otherwise); only the other groups' files are read, a
record batch at a time, and their columns hashed as loading hashes them
(`ColumnDigests`, over the batches as read).

The result is the part of the version's record that comparing it with another
needs (`comparable_record`'s form), under the key loading will store it with.
Nothing is written: no entry, and no record of the files' digests (the caller
runs this with a scratch store as the default store, see `_plan`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dagster_ds.arrow import (
    DEFAULT_SHARD_BYTES,
    Transform,
    file_groups,
    group_transform,
    recorded_entries,
    split_fingerprint,
)
from dagster_ds.cache import CacheStore
from dagster_ds.features import Features
from dagster_ds.fingerprint import ColumnDigests
from dagster_ds.formats import ResolvedFile, iter_batches
from dagster_ds.orchestration._source_versions import (
    latest_version_ref,
    source_files,
    source_version_key,
)

if TYPE_CHECKING:
    from dagster_ds.orchestration.source import _SourceSpec  # pyright: ignore[reportPrivateUsage]

__all__ = ["SourceColumns", "source_columns"]


@dataclass(frozen=True)
class SourceColumns:
    """What loading a source now will record of its columns, and what finding it out read.

    Attributes:
        key: The store key its loaded version will have (`source_version_key`).
        metadata: The version's record as far as comparing it needs (features,
            shards, and each shard entry's column fingerprints).
        files_read: The changed files read to hash their columns.
        bytes_read: Their size.
    """

    key: str
    metadata: dict[str, Any]
    files_read: int
    bytes_read: int


def source_columns(store: CacheStore, spec: _SourceSpec) -> SourceColumns | None:
    """The columns of the version loading ``spec`` would store in ``store``, without loading it.

    None when the source is not plain data files (loading alone tells its
    version), or a changed file has no rows to hash. Run with a scratch store as
    the default store (`cache_root`): the files' digests are recorded there.
    """
    found = source_files(spec)
    if found is None:
        return None
    files, transforms = found
    fingerprint = split_fingerprint(transforms)
    groups = file_groups(
        [transform.fingerprint for transform in transforms],
        [file.size for file in files],
        DEFAULT_SHARD_BYTES,
    )
    shards: list[dict[str, Any]] = []
    entries: dict[str, Any] = {}
    features: list[Any] | None = None
    files_read = bytes_read = 0
    last = recorded_entries(store, store.ref(latest_version_ref(spec)))
    for group in groups:
        members = files[group.start : group.stop]
        load = group_transform(transforms[group.start : group.stop], [f.url for f in members])
        recorded = _recorded(last.get(load.fingerprint, {}).get("metadata")) or _recorded(
            _manifest_metadata(store, load)
        )
        if recorded is None:
            recorded = _hashed(spec, members)
            files_read += len(members)
            bytes_read += sum(file.size for file in members)
        if recorded is None:
            return None
        columns, shard_features = recorded
        features = features if features is not None else shard_features
        shards.append({"table": load.fingerprint, "rows": None, "bases": [], "content": None})
        entries[load.fingerprint] = {"metadata": {"column_fingerprints": columns}}
    metadata = {"features": features or [], "shards": shards, "mapping": None, "entries": entries}
    return SourceColumns(source_version_key(spec, fingerprint), metadata, files_read, bytes_read)


def _manifest_metadata(store: CacheStore, load: Transform) -> Mapping[str, Any] | None:
    """The metadata of the store's entry of ``load``, if it holds one."""
    manifest = store.manifest(load.fingerprint)
    return manifest.metadata if manifest is not None else None


def _recorded(metadata: object) -> tuple[dict[str, str], list[Any]] | None:
    """The column fingerprints and features an entry's ``metadata`` recorded, if any."""
    if not isinstance(metadata, Mapping):
        return None
    columns, features = metadata.get("column_fingerprints"), metadata.get("features")
    if not isinstance(columns, dict) or not isinstance(features, list):
        return None
    return {str(name): str(value) for name, value in columns.items()}, features


def _hashed(
    spec: _SourceSpec, files: Sequence[ResolvedFile]
) -> tuple[dict[str, str], list[Any]] | None:
    """Read ``files`` and hash their columns as loading would."""
    digests = ColumnDigests()
    schema = None
    for file in files:
        for batch in iter_batches(
            file, spec.path, storage_options=spec.storage_options, **spec.reader_options
        ):
            schema = schema or batch.schema
            digests.feed(batch)
    if schema is None:
        return None
    return digests.hexdigests(), Features.from_arrow_schema(schema).to_yaml_list()

"""manifest.json: the proof that an entry is complete, and what it holds.

```json
{
 "created": "2025-01-31T12:00:00.123456+00:00",
 "files": [{"name": "data-00000-of-00001.arrow", "size": 1234, "xxh3_128": "<32 hex>"}],
 "fingerprint": "<32 hex>",
 "format_version": 1,
 "metadata": {"num_rows": 3, "parents": ["<32 hex>"], "transform": "map"}
}
```

``metadata`` is the caller's JSON data, kept apart from what the cache computes
so the two never collide. Manifests are JSON only: nothing read from the cache
is ever unpickled.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

import xxhash

from dagster_ds.cache._json import JSONValue, as_object, dumps, parse_object
from dagster_ds.errors import CacheFormatError, CacheMetadataError

FORMAT_VERSION = 1


class ManifestError(Exception):
    """A manifest is unreadable or malformed (the entry is corrupt). Internal."""


@dataclass(frozen=True)
class FileRecord:
    name: str
    size: int
    xxh3_128: str


@dataclass(frozen=True)
class Manifest:
    fingerprint: str
    files: tuple[FileRecord, ...]
    created: str
    metadata: dict[str, JSONValue]

    @property
    def size(self) -> int:
        """Total size of the data files in bytes."""
        return sum(record.size for record in self.files)

    @property
    def created_at(self) -> datetime.datetime:
        return datetime.datetime.fromisoformat(self.created)

    def record(self, name: str) -> FileRecord | None:
        return next((record for record in self.files if record.name == name), None)

    def to_json(self) -> dict[str, JSONValue]:
        files: list[JSONValue] = [
            {"name": r.name, "size": r.size, "xxh3_128": r.xxh3_128} for r in self.files
        ]
        return {
            "created": self.created,
            "files": files,
            "fingerprint": self.fingerprint,
            "format_version": FORMAT_VERSION,
            "metadata": self.metadata,
        }

    def to_bytes(self) -> bytes:
        return dumps(self.to_json())

    @classmethod
    def from_bytes(cls, data: bytes, *, where: str) -> Manifest:
        """Parse and check a manifest.

        Raises:
            ManifestError: It is not a well-formed manifest (corrupt entry).
            CacheFormatError: It was written by a newer dagster_ds.
        """
        value = parse_object(data)
        if value is None:
            raise ManifestError("manifest.json is not a JSON object")
        return cls.from_json(value, where=where)

    @classmethod
    def from_json(cls, value: Mapping[str, JSONValue], *, where: str) -> Manifest:
        """Check a manifest already parsed (one embedded in another record, say).

        Raises:
            ManifestError: It is not a well-formed manifest.
            CacheFormatError: It was written by a newer dagster_ds.
        """
        version = value.get("format_version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise ManifestError(f"manifest.json has no integer format_version: {version!r}")
        if version > FORMAT_VERSION:
            raise CacheFormatError(
                f"The cache entry {where!r} has manifest format {version}, but this dagster_ds "
                f"reads format {FORMAT_VERSION} at most. Upgrade dagster_ds, or use another "
                "cache root (DAGSTER_DS_CACHE) for this version."
            )
        fingerprint, created = value.get("fingerprint"), value.get("created")
        metadata = as_object(value.get("metadata"))
        if not isinstance(fingerprint, str) or not isinstance(created, str) or metadata is None:
            raise ManifestError("manifest.json lacks fingerprint, created or metadata")
        try:
            datetime.datetime.fromisoformat(created)
        except ValueError as error:
            raise ManifestError(f"manifest.json has a bad created time {created!r}") from error
        return cls(fingerprint, _parse_files(value.get("files")), created, metadata)


def _parse_files(value: JSONValue) -> tuple[FileRecord, ...]:
    if not isinstance(value, list):
        raise ManifestError("manifest.json has no files list")
    records: list[FileRecord] = []
    for item in value:
        record = as_object(item)
        name, size, digest = (None, None, None) if record is None else _fields(record)
        if not isinstance(name, str) or not isinstance(size, int) or not isinstance(digest, str):
            raise ManifestError(f"manifest.json has a malformed file record {item!r}")
        records.append(FileRecord(name, size, digest))
    if len({r.name for r in records}) != len(records):
        raise ManifestError("manifest.json lists a file twice")
    return tuple(records)


def _fields(record: dict[str, JSONValue]) -> tuple[JSONValue, JSONValue, JSONValue]:
    size = record.get("size")
    return record.get("name"), None if isinstance(size, bool) else size, record.get("xxh3_128")


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()


def check_metadata(fingerprint: str, metadata: Mapping[str, object] | None) -> dict[str, JSONValue]:
    """The caller's metadata as plain JSON data (a copy); raises CacheMetadataError otherwise."""
    if metadata is None:
        return {}
    try:
        if not all(isinstance(key, str) for key in cast(Mapping[object, object], metadata)):
            raise TypeError("keys must be strings")
        data = dumps(dict(metadata))
    except (TypeError, ValueError, RecursionError) as error:
        raise CacheMetadataError(
            f"Metadata for cache entry {fingerprint!r} is not JSON data ({error}): "
            f"{dict(metadata)!r}. Use str keys and str/int/float/bool/None/list/dict values "
            "(convert features, paths or dates to strings or dicts first)."
        ) from error
    parsed = parse_object(data)
    return cast(dict[str, JSONValue], parsed)


def new_hasher() -> xxhash.xxh3_128:
    return xxhash.xxh3_128()

"""Entries opened from a record: absent once quarantined since the record was made."""

from __future__ import annotations

import pytest
import s3fs

from dagster_ds.cache import CacheCorruptionWarning, CacheStore
from dagster_ds.errors import CacheEntryDamagedError

KEY = "ef" * 16


def test_an_entry_quarantined_since_its_record_opens_from_it_as_absent(s3_endpoint: str) -> None:
    root = "s3://datasets/quarantined"
    store = CacheStore(root, storage_options={"endpoint_url": s3_endpoint})

    def build(writer: object) -> None:
        writer.write_bytes("a.bin", b"0123456789")  # type: ignore[attr-defined]

    recorded = store.get_or_create(KEY, build).manifest
    assert store.known_entry(KEY, recorded) is not None
    fs = s3fs.S3FileSystem(endpoint_url=s3_endpoint, skip_instance_cache=True)
    fs.pipe(f"{store.entry_url(KEY).removeprefix('s3://')}/a.bin", b"0123X56789")
    with (
        pytest.warns(CacheCorruptionWarning, match="quarantin"),
        pytest.raises(CacheEntryDamagedError),
    ):
        store.known_entry(KEY, recorded).open("a.bin").read()  # type: ignore[union-attr]
    # The record still names it, as it was: it is gone, and is computed again.
    assert store.known_entry(KEY, recorded) is None
    rebuilt = store.get_or_create(KEY, build)
    assert rebuilt.open("a.bin").read() == b"0123456789"
    assert store.known_entry(KEY, rebuilt.manifest) is not None

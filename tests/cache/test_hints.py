"""Hints: entries known from a record (read nothing), and refs naming the latest record."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from dagster_ds.cache import CacheStore
from dagster_ds.errors import CacheEntryDamagedError, InvalidFingerprintError
from tests.conftest import s3_requests

KEY = "ab" * 16
OTHER = "cd" * 16


def _stored(store: CacheStore, key: str = KEY, data: bytes = b"rows") -> dict[str, Any]:
    return store.get_or_create(key, lambda writer: writer.write_bytes("a.bin", data)).manifest


def test_a_recorded_entry_is_opened_without_a_request(s3_endpoint: str) -> None:
    store = CacheStore("s3://datasets/hints", storage_options={"endpoint_url": s3_endpoint})
    manifest = _stored(store)
    fresh = CacheStore("s3://datasets/hints", storage_options={"endpoint_url": s3_endpoint})
    with s3_requests() as requests, fresh.recorded({KEY: manifest}):
        looked_up = fresh.lookup(KEY)
        built = fresh.get_or_create(KEY, lambda writer: pytest.fail("it is recorded"))
    # No manifest read: one listing of the root (is anything quarantined?), per process.
    assert len(requests.lines) == 1, requests.lines
    assert "list-type=2&prefix=hints/&" in requests.lines[0]
    assert looked_up is not None
    assert built.manifest == manifest
    assert looked_up.open("a.bin").read() == b"rows"


def test_a_stale_hint_is_never_served_and_ends_with_its_block(root: str) -> None:
    store = CacheStore(root)
    manifest = _stored(store)
    assert store.remove(KEY, force=True)
    with store.recorded({KEY: manifest}):
        entry = store.lookup(KEY)
        assert entry is not None  # as recorded: nothing was read
        with pytest.raises(CacheEntryDamagedError):
            entry.open("a.bin").read()
    assert store.lookup(KEY) is None  # outside the block, the store as it is


def test_hints_are_per_store_and_per_thread(root: str, tmp_path: Path) -> None:
    store, elsewhere = CacheStore(root), CacheStore(str(tmp_path / "elsewhere"))
    manifest = _stored(store)
    assert store.remove(KEY, force=True)
    seen: list[object] = []
    with store.recorded({KEY: manifest}):
        thread = threading.Thread(target=lambda: seen.append(store.lookup(KEY)))
        thread.start()
        thread.join()
        assert elsewhere.lookup(KEY) is None
    assert seen == [None]


def test_a_ref_names_the_key_last_set(root: str) -> None:
    store = CacheStore(root)
    assert store.ref(KEY) is None
    store.set_ref(KEY, OTHER)
    assert CacheStore(root).ref(KEY) == OTHER
    store.set_ref(KEY, KEY)
    assert CacheStore(root).ref(KEY) == KEY
    with pytest.raises(InvalidFingerprintError):
        store.set_ref(KEY, "not a key")


def test_a_ref_costs_one_request_each_way_on_s3(s3_endpoint: str) -> None:
    store = CacheStore("s3://datasets/refs", storage_options={"endpoint_url": s3_endpoint})
    store.set_ref(KEY, OTHER)  # (the first write also checks the bucket)
    with s3_requests() as requests:
        store.set_ref(KEY, KEY)
        assert store.ref(KEY) == KEY
    assert len(requests.lines) == 2, requests.lines

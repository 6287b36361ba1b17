"""Roots: local paths, file:// URLs, fsspec URLs and filesystems."""

from __future__ import annotations

from pathlib import Path

import pytest
from fsspec.implementations.dirfs import DirFileSystem
from fsspec.implementations.local import LocalFileSystem

from dagster_ds.cache import CacheStore
from dagster_ds.cache._storage import open_storage
from tests.conftest import s3_requests

from .conftest import fingerprint


def test_local_roots(tmp_path: Path) -> None:
    assert CacheStore(tmp_path).is_local
    assert CacheStore(str(tmp_path)).root == str(tmp_path)
    store = CacheStore(f"file://{tmp_path}")
    assert store.is_local
    assert store.root == f"file://{tmp_path}"


def test_local_and_file_url_share_entries(tmp_path: Path) -> None:
    CacheStore(tmp_path).get_or_create(fingerprint(1), lambda w: w.write_bytes("a", b"1"))
    entry = CacheStore(f"file://{tmp_path}").lookup(fingerprint(1))
    assert entry is not None
    assert entry.local_path("a") == str(tmp_path / "objects" / "00" / fingerprint(1) / "a")


def test_memory_is_not_local() -> None:
    store = CacheStore("memory://not-local")
    assert not store.is_local
    entry = store.get_or_create(fingerprint(2), lambda w: w.write_bytes("a", b"1"))
    assert entry.local_path("a") is None


def test_an_fsspec_filesystem_can_be_given(tmp_path: Path) -> None:
    filesystem = DirFileSystem(path=str(tmp_path), fs=LocalFileSystem())
    store = CacheStore("cache", filesystem=filesystem)
    assert not store.is_local  # no atomic directory rename through fsspec
    store.get_or_create(fingerprint(3), lambda w: w.write_bytes("a", b"1"))
    manifest = tmp_path / "cache" / "objects" / "00" / fingerprint(3) / "manifest.json"
    assert manifest.exists()


def test_storage_options_are_for_urls(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="storage_options"):
        CacheStore(tmp_path, storage_options={"anon": True})
    with pytest.raises(ValueError, match="root="):
        CacheStore(filesystem=LocalFileSystem())


@pytest.mark.parametrize(
    ("option", "value"),
    [("checksums", "sometimes"), ("lock_mode", "mutex"), ("stale_lock_timeout", 0)],
)
def test_options_are_checked(tmp_path: Path, option: str, value: object) -> None:
    with pytest.raises(ValueError, match=option):
        CacheStore(tmp_path, **{option: value})  # type: ignore[arg-type]


def test_on_s3_a_small_file_is_read_in_one_request(s3_endpoint: str) -> None:
    # Manifests, leases and fences are read whole on every lookup: one GET each, and an
    # absent one (no eviction under way, the usual case) a single 404.
    storage = open_storage("s3://datasets/cache", {"endpoint_url": s3_endpoint})
    path = storage.join("manifest.json")
    storage.write_bytes(path, b"{}")
    with s3_requests() as requests:
        assert storage.read_bytes(path) == b"{}"
        with pytest.raises(FileNotFoundError):
            storage.read_bytes(storage.join("evicting"))
    assert requests.made() == [("GET", 200), ("GET", 404)]


@pytest.mark.parametrize("backend", ["s3", "dirfs", "local"])
def test_a_conditional_write_on_a_version_succeeds_once(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if backend == "s3":
        endpoint = request.getfixturevalue("s3_endpoint")
        storage = open_storage("s3://datasets/cas", {"endpoint_url": endpoint})
    elif backend == "dirfs":
        (tmp_path / "cas").mkdir()
        fs = DirFileSystem(path=str(tmp_path / "cas"), fs=LocalFileSystem())
        storage = open_storage("", filesystem=fs)
    else:
        storage = open_storage(tmp_path / "cas")
    storage.makedirs(storage.root)
    path = storage.join("lock")
    first = storage.put_if(path, b"first", None)
    assert first is not None
    assert storage.put_if(path, b"second", None) is None  # it exists
    taken = storage.put_if(path, b"taken over", first)
    assert taken is not None
    assert storage.put_if(path, b"late", first) is None  # that version is gone
    assert storage.read_bytes(path) == b"taken over"
    assert not storage.remove_if(path, first)
    assert storage.read_bytes(path) == b"taken over"
    assert storage.remove_if(path, taken)
    assert storage.version(path) is None
    assert not storage.remove_if(path, taken)


def test_on_s3_a_conditional_write_is_one_request(s3_endpoint: str) -> None:
    storage = open_storage("s3://datasets/cas", {"endpoint_url": s3_endpoint})
    path = storage.join("lock")
    with s3_requests() as requests:
        first = storage.put_if(path, b"first", None)
        assert first is not None
        assert storage.put_if(path, b"second", None) is None
        assert storage.put_if(path, b"again", first) is not None
        assert storage.put_if(path, b"late", first) is None
    assert requests.made() == [("PUT", 200), ("PUT", 412), ("PUT", 200), ("PUT", 412)]

"""The caching switch: disable/enable, the context manager, and the per-process temp store."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from dagster_ds.cache import (
    CacheStore,
    caching_disabled,
    default_cache_root,
    disable_caching,
    enable_caching,
    is_caching_enabled,
)

from .conftest import fingerprint, run_worker


def test_switch_on_and_off() -> None:
    assert is_caching_enabled()
    disable_caching()
    assert not is_caching_enabled()
    disable_caching()
    assert not is_caching_enabled()
    enable_caching()
    assert is_caching_enabled()


def test_context_manager_nests_and_restores() -> None:
    with caching_disabled():
        assert not is_caching_enabled()
        with caching_disabled():
            assert not is_caching_enabled()
        assert not is_caching_enabled()
    assert is_caching_enabled()
    with pytest.raises(KeyError), caching_disabled():
        raise KeyError("boom")
    assert is_caching_enabled()


def test_context_manager_is_thread_safe() -> None:
    barrier = threading.Barrier(8)
    seen: list[bool] = []

    def work() -> None:
        with caching_disabled():
            barrier.wait()
            seen.append(is_caching_enabled())
            barrier.wait()

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [False] * 8
    assert is_caching_enabled()  # every block exited: back on, whatever the interleaving


def test_default_store_follows_the_environment(tmp_path: Path) -> None:
    # The autouse fixture points DAGSTER_DS_CACHE at a temporary folder.
    assert default_cache_root() == str(tmp_path / "default-cache")
    store = CacheStore()
    assert store.root == str(tmp_path / "default-cache")
    assert not store.random_names


def test_without_caching_entries_get_random_names_and_are_never_reused() -> None:
    with caching_disabled():
        store = CacheStore()
    assert store.random_names
    assert store.is_local
    assert not store.root.startswith(os.environ["DAGSTER_DS_CACHE"])
    fp = fingerprint(1)
    with store.writer(fp, metadata={"num_rows": 1}) as writer:
        writer.write_bytes("data-00000-of-00001.arrow", b"x")
    entry = writer.entry
    assert entry.fingerprint == fp
    assert entry.key != fp
    with entry.open("data-00000-of-00001.arrow") as file:
        assert file.read() == b"x"
    assert store.lookup(fp) is None
    built: list[int] = []
    store.get_or_create(fp, lambda w: built.append(1))
    store.get_or_create(fp, lambda w: built.append(1))
    assert built == [1, 1]
    assert {info.fingerprint for info in store.ls()} == {fp}
    assert store.verify().ok
    # The same store root is shared with a store created while caching is still off.
    with caching_disabled():
        assert CacheStore().root == store.root


def test_explicit_roots_are_not_affected(tmp_path: Path) -> None:
    with caching_disabled():
        store = CacheStore(tmp_path)
    assert not store.random_names
    assert CacheStore(tmp_path, random_names=True).random_names


def test_the_temporary_folder_is_removed_at_exit() -> None:
    result = json.loads(run_worker("write-without-caching", fingerprint(2)).stdout)
    assert result["key"] != fingerprint(2)
    assert not os.path.exists(result["root"])

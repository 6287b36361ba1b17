"""gc, ls and remove: least-recently-used eviction that never touches an entry in use."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from dagster_ds.cache import CacheCorruptionWarning, CacheStore

from .conftest import fingerprint, start_worker

SIZE = 1000


def _write(store: CacheStore, number: int) -> str:
    fp = fingerprint(number)
    with store.writer(fp, metadata={"number": number}) as writer:
        writer.write_bytes("data-00000-of-00001.arrow", bytes([number]) * SIZE)
    writer.entry.close()
    return fp


def test_gc_evicts_least_recently_used_first(root: str) -> None:
    store = CacheStore(root)
    a, b, c = (_write(store, n) for n in (1, 2, 3))
    looked_up = store.lookup(b)  # a lookup alone is no use: it writes nothing
    assert looked_up is not None
    looked_up.close()
    used = store.lookup(a)
    assert used is not None
    with used.open("data-00000-of-00001.arrow") as file:  # a read: a is now the most recent
        file.read()
    used.close()
    assert [info.fingerprint for info in store.ls()] == [a, c, b]
    report = store.gc(max_size_bytes=2 * SIZE)
    assert report.evicted == (b,)
    assert report.freed_bytes == SIZE
    assert report.total_bytes == 2 * SIZE
    report = store.gc(max_size_bytes=SIZE + 1)
    assert report.evicted == (c,)
    assert store.lookup(b) is None
    assert store.lookup(c) is None
    assert store.lookup(a) is not None
    assert store.gc(max_size_bytes=SIZE).evicted == ()  # already small enough


def test_gc_never_evicts_an_entry_open_in_this_process(root: str) -> None:
    store = CacheStore(root)
    a, b = _write(store, 1), _write(store, 2)
    entry = store.lookup(a)
    assert entry is not None
    report = store.gc(0)
    assert report.evicted == (b,)
    assert report.in_use == (a,)
    assert report.total_bytes == SIZE
    with entry.open("data-00000-of-00001.arrow") as file:
        assert file.read() == bytes([1]) * SIZE
    entry.close()
    assert store.gc(0).evicted == (a,)
    assert store.ls() == []


def test_an_entry_being_written_is_kept_by_gc(root: str) -> None:
    store = CacheStore(root)
    with store.writer(fingerprint(9)) as writer:
        writer.write_bytes("a.bin", b"x" * SIZE)
        store.gc(0)
    # Just published and still held by its writer: gc leaves it alone.
    assert store.gc(0).in_use == (fingerprint(9),)
    writer.entry.close()
    assert store.gc(0).evicted == (fingerprint(9),)


def _hold(spec: str, fp: str, lock_mode: str = "auto") -> subprocess.Popen[str]:
    holder = start_worker("hold", spec, fp, lock_mode)
    assert holder.stdout is not None
    line = holder.stdout.readline()
    assert line.startswith("holding"), holder.stderr.read() if holder.stderr else line
    return holder


@pytest.mark.slow
@pytest.mark.parametrize(
    ("readers", "collector"),
    [("auto", "auto"), ("lease", "lease"), ("auto", "lease"), ("lease", "auto")],
    ids=["byte-range-locks", "lease-files", "mixed", "mixed-other-way"],
)
def test_gc_skips_entries_other_processes_hold_until_they_exit(
    tmp_path: Path, readers: str, collector: str
) -> None:
    # Readers record what they read in one usage record per process, whatever the
    # lock mode (which only picks the build locks); a collector of either mode sees them.
    spec = str(tmp_path / "cache")
    store = CacheStore(spec, lock_mode="lease" if collector == "lease" else "auto")
    a, b, c = (_write(store, n) for n in (1, 2, 3))
    exits, killed = _hold(spec, a, readers), _hold(spec, b, readers)  # both memory-map theirs
    try:
        report = store.gc(0)
        assert report.evicted == (c,)
        assert set(report.in_use) == {a, b}
        assert {info.fingerprint for info in store.ls() if info.in_use} == {a, b}
        # One exits normally (its record is marked ended at exit), one is killed -9 (its
        # record stays as it was, but its process is gone): neither protects its entry.
        exits.communicate("", timeout=30)
        assert exits.returncode == 0
        killed.send_signal(signal.SIGKILL)
        killed.communicate(timeout=30)
        report = store.gc(0)
        assert set(report.evicted) == {a, b}
        assert report.in_use == ()
    finally:
        for holder in (exits, killed):
            holder.kill()
            holder.communicate()
    records = set(os.listdir(tmp_path / "cache" / "usage")) - {"evicting", "last-used.json"}
    assert all(f"-{os.getpid()}-" in name for name in records)  # gc folded the others


def test_gc_removes_dead_writers_garbage_and_old_quarantine(tmp_path: Path) -> None:
    store = CacheStore(tmp_path)
    fp = _write(store, 1)
    (tmp_path / "objects" / fp[:2] / fp / "data-00000-of-00001.arrow").write_bytes(b"short")
    with pytest.warns(CacheCorruptionWarning):
        assert store.lookup(fp) is None
    (quarantined,) = os.listdir(tmp_path / "quarantine")
    assert store.gc(0, grace=3600).removed_garbage == ()  # too recent
    assert store.gc(0, grace=0).removed_garbage == (str(tmp_path / "quarantine" / quarantined),)


def test_gc_rejects_a_negative_size(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        CacheStore(tmp_path).gc(-1)


def test_ls_describes_entries(root: str) -> None:
    store = CacheStore(root)
    before = time.time()
    fp = _write(store, 7)
    (info,) = store.ls()
    assert info.fingerprint == fp
    assert info.size == SIZE
    assert info.files == ("data-00000-of-00001.arrow",)
    assert info.metadata == {"number": 7}
    assert info.in_use is False
    assert info.created <= info.last_used
    assert info.created.timestamp() >= before - 1


def test_remove(root: str) -> None:
    store = CacheStore(root)
    fp = _write(store, 1)
    entry = store.lookup(fp)
    assert entry is not None
    assert not store.remove(fp)  # held open: kept
    assert store.lookup(fp) is not None
    assert store.remove(fp, force=True)
    assert store.lookup(fp) is None
    assert not store.remove(fp)
    entry.close()


def test_last_used_does_not_rewrite_the_manifest(tmp_path: Path) -> None:
    store = CacheStore(tmp_path)
    fp = _write(store, 1)
    manifest = tmp_path / "objects" / fp[:2] / fp / "manifest.json"
    before = manifest.read_bytes(), manifest.stat().st_mtime_ns
    for _ in range(3):
        entry = store.lookup(fp)
        assert entry is not None
        entry.close()
    assert (manifest.read_bytes(), manifest.stat().st_mtime_ns) == before


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "local-lease-files", "memory"])
def test_readers_racing_gc_never_fail_or_see_corruption(tmp_path: Path, backend: str) -> None:
    # gc takes an entry out, finds a reader's fresh lease and puts it back, or destroys
    # it; the reader either gets the complete entry or a miss, never a broken one (a
    # false corruption warning would fail this test: warnings are errors).
    import threading

    root = str(tmp_path) if backend.startswith("local") else f"memory://race-{tmp_path.name}"
    lock_mode = "lease" if backend == "local-lease-files" else "auto"
    store = CacheStore(root, checksums="always", lock_mode=lock_mode)
    fps = [fingerprint(n) for n in range(1, 4)]
    payload = {fp: fp.encode() * 300 for fp in fps}
    errors: list[BaseException] = []
    stop = time.monotonic() + 1.0

    def read() -> None:
        try:
            while time.monotonic() < stop:
                for fp in fps:
                    entry = store.get_or_create(
                        fp, lambda w, fp=fp: w.write_bytes("a", payload[fp])
                    )
                    with entry, entry.open("a") as file:
                        assert file.read() == payload[fp]
        except BaseException as error:
            errors.append(error)

    def collect() -> None:
        try:
            while time.monotonic() < stop:
                store.gc(0)
        except BaseException as error:
            errors.append(error)

    threads = [
        threading.Thread(target=read),
        threading.Thread(target=read),
        threading.Thread(target=collect),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_a_forked_child_closing_an_inherited_entry_leaves_the_parent_s_lease(
    tmp_path: Path,
) -> None:
    import multiprocessing

    store = CacheStore(tmp_path)
    a = _write(store, 1)
    entry = store.lookup(a)
    assert entry is not None

    def close_inherited_then_read_own() -> None:
        entry.close()  # the parent's lease: not the child's to end
        own = CacheStore(tmp_path).lookup(a)
        assert own is not None
        own.close()

    child = multiprocessing.get_context("fork").Process(target=close_inherited_then_read_own)
    child.start()
    child.join(30)
    assert child.exitcode == 0
    assert store.gc(0).in_use == (a,)
    entry.close()
    assert store.gc(0).evicted == (a,)

"""Usage records: a lookup writes nothing, a process's reads write one record, gc honours it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dagster_ds.cache import CacheStore
from dagster_ds.errors import CacheEntryDamagedError
from tests import _fast
from tests.conftest import s3_requests

from .conftest import fingerprint

DATA = "data-00000-of-00001.arrow"
ENTRIES = 100


def _fill(store: CacheStore, count: int) -> list[str]:
    keys = [fingerprint(number) for number in range(1, count + 1)]
    for key in keys:
        with store.writer(key) as writer:
            writer.write_bytes(DATA, key.encode() * 4)
        writer.entry.close()
    return keys


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: (size, mtime in ns)."""
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in root.rglob("*")
        if path.is_file()
    }


_READER = """
import json, sys
from dagster_ds.cache import CacheStore
from dagster_ds.errors import CacheEntryDamagedError
store = CacheStore(sys.argv[1])
entries = [store.lookup(key) for key in json.loads(sys.argv[2])]
assert all(entry is not None for entry in entries)
print("looked up", flush=True)
sys.stdin.readline()
for entry in entries:
    with entry.open("data-00000-of-00001.arrow") as file:
        file.read()
print("read", flush=True)
sys.stdin.readline()
"""


def test_lookups_write_nothing_and_a_process_s_reads_write_one_record(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    keys = _fill(CacheStore(root), ENTRIES)
    before = _tree(root)
    reader = _fast.Popen(
        [sys.executable, "-c", _READER, str(root), json.dumps(keys)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert reader.stdin is not None
    assert reader.stdout is not None
    try:
        assert reader.stdout.readline() == "looked up\n"
        assert _tree(root) == before  # 100 lookups: not one byte written
        reader.stdin.write("\n")
        reader.stdin.flush()
        assert reader.stdout.readline() == "read\n"
        after = _tree(root)
        written = sorted(set(after) - set(before))
        assert [Path(name).parent.name for name in written] == ["usage"]  # one record
        assert {name: after[name] for name in before} == before  # nothing else touched
        record = (root / written[0]).read_text().splitlines()
        assert sorted(line.split()[0] for line in record[1:]) == keys
        assert CacheStore(root).gc(0).evicted == ()  # the live reader's record pins them all
    finally:
        reader.communicate("\n", timeout=30)
    assert reader.returncode == 0
    assert len(CacheStore(root).gc(0).evicted) == ENTRIES  # its process ended: nothing pinned
    left = [path.name for path in (root / "usage").iterdir() if path.is_file()]
    assert left == ["last-used.json"]  # gc folded the ended record into the summary


def test_on_s3_a_lookup_is_one_get_and_reads_write_the_record_once(s3_endpoint: str) -> None:
    store = CacheStore("s3://datasets/cache", storage_options={"endpoint_url": s3_endpoint})
    keys = _fill(store, 4)
    with s3_requests() as lookups:
        entries = [store.lookup(key) for key in keys]
    assert all(entry is not None for entry in entries)
    assert lookups.made() == [("GET", 200)] * len(keys)
    with s3_requests() as reads:
        for entry in entries:
            assert entry is not None
            with entry.open(DATA) as file:
                assert file.read() == entry.key.encode() * 4
    writes = [request for request in reads.made() if request[0] in ("PUT", "POST", "DELETE")]
    assert writes == [("PUT", 200)]  # the usage record, once for the 4 entries held


@pytest.mark.parametrize("checksums", ["first-use", "always"])
def test_an_entry_evicted_between_lookup_and_read_fails_the_read_never_serves_it(
    tmp_path: Path, checksums: str
) -> None:
    # Another process's gc may take an entry this one looked up but has not read yet
    # (a lookup records nothing): the read then fails clearly, and the next lookup misses.
    from dagster_ds.errors import CacheEntryDamagedError

    root = tmp_path / "cache"
    store = CacheStore(root, checksums=checksums)  # type: ignore[arg-type]
    (key,) = _fill(store, 1)
    entry = store.lookup(key)
    assert entry is not None
    code = (
        f"from dagster_ds.cache import CacheStore; print(CacheStore({str(root)!r}).gc(0).evicted)"
    )
    done = _fast.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert key in done.stdout
    with pytest.raises(CacheEntryDamagedError, match=r"removed or replaced|evicted"):
        entry.open(DATA)
    assert store.lookup(key) is None


def test_a_lease_ended_by_garbage_collection_while_the_record_is_written_never_deadlocks(
    tmp_path: Path,
) -> None:
    # Garbage collection can end a lease in any thread (an fsspec event loop's, say)
    # while another thread waits on that thread to write the usage record.
    import gc
    import threading

    from fsspec.implementations.dirfs import DirFileSystem
    from fsspec.implementations.local import LocalFileSystem

    ended: list[bool] = []
    doomed: list[object] = []

    class _EndsALeaseWhileWriting(DirFileSystem):
        """Writes in a thread of its own (as s3fs's event loop does), where a lease ends."""

        def pipe_file(self, path: str, value: bytes, **kwargs: object) -> None:
            if not (doomed and "usage/" in path):  # the entries' own files: as usual
                DirFileSystem.pipe_file(self, path, value, **kwargs)
                return

            def write() -> None:
                doomed.pop()  # the last reference: its lease ends here, in this thread
                gc.collect()
                DirFileSystem.pipe_file(self, path, value, **kwargs)
                ended.append(True)

            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            writer.join(10)

    folder = tmp_path / "cache"
    folder.mkdir()
    fs = _EndsALeaseWhileWriting(path=str(folder), fs=LocalFileSystem())
    store = CacheStore("", filesystem=fs)
    first, second = _fill(store, 2)
    doomed.append(store.lookup(second))
    entry = store.lookup(first)
    assert entry is not None
    with entry.open(DATA) as file:  # records the use: a write, during which `doomed` ends
        assert file.read() == first.encode() * 4
    assert ended == [True]


def test_on_s3_recording_a_read_lists_once_and_still_sees_an_eviction_under_way(
    s3_endpoint: str,
) -> None:
    from dagster_ds.cache._layout import Layout
    from dagster_ds.cache._leases import eviction_notice
    from dagster_ds.cache._storage import open_storage

    root = "s3://datasets/notices"
    store = CacheStore(root, storage_options={"endpoint_url": s3_endpoint})
    first, second = _fill(store, 2)
    entry = store.lookup(first)
    assert entry is not None
    with s3_requests() as reads:
        entry.open(DATA).read()
    listings = [line for line in reads.lines if "list-type=" in line]
    assert len(listings) == 1, listings  # usage/ (no notice there): not usage/evicting/ twice
    layout = Layout(open_storage(root, {"endpoint_url": s3_endpoint}))
    other = store.lookup(second)
    assert other is not None
    with (
        eviction_notice(layout, [second], foreign_ttl=60.0),  # an evictor, mid-way
        pytest.raises(CacheEntryDamagedError, match="evicted"),
    ):
        other.open(DATA).read()

"""Writing entries: atomic publish, aborts, kill -9 at random moments, tmp/ garbage."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pytest

from dagster_ds.cache import CacheStore
from dagster_ds.errors import CacheMetadataError, CacheWriterError, InvalidFingerprintError
from tests.cache._worker import (
    entry_content,
    fingerprint_for,
    open_store,
    write_entry,
    write_forever,
)

from .conftest import fingerprint, start_worker

DATA = "data-00000-of-00001.arrow"


def test_arrow_ipc_round_trip(root: str) -> None:
    store = CacheStore(root)
    table = pa.table({"text": ["a", "bb", "ccc"], "n": [1, 2, 3]})
    with (
        store.writer(fingerprint(1), metadata={"num_rows": 3, "parents": []}) as writer,
        writer.open(DATA) as sink,
        pa.ipc.new_file(sink, table.schema) as ipc,
    ):
        ipc.write_table(table)
    entry = store.lookup(fingerprint(1))
    assert entry is not None
    assert entry == writer.entry
    assert entry.files == (DATA,)
    assert entry.metadata == {"num_rows": 3, "parents": []}
    manifest = entry.manifest
    assert manifest["fingerprint"] == fingerprint(1)
    assert manifest["format_version"] == 1
    assert manifest["files"] == [
        {"name": DATA, "size": entry.size, "xxh3_128": manifest["files"][0]["xxh3_128"]}  # type: ignore[index]
    ]
    with entry.open(DATA) as source:
        assert pa.ipc.open_file(source).read_all().equals(table)
    local = entry.local_path(DATA)
    if store.is_local:
        assert local is not None
        assert pa.ipc.open_file(pa.memory_map(local)).read_all().equals(table)
    else:
        assert local is None


def test_nothing_is_visible_before_the_block_exits(root: str) -> None:
    store = CacheStore(root)
    with store.writer(fingerprint(2)) as writer:
        writer.write_bytes("a.bin", b"a")
        with writer.open("b.bin") as file:
            file.write(b"b")
            assert store.lookup(fingerprint(2)) is None
        assert store.lookup(fingerprint(2)) is None
        assert store.ls() == []
    assert store.lookup(fingerprint(2)) is not None
    assert writer.files == ("a.bin", "b.bin")


def test_an_exception_publishes_nothing_and_removes_tmp_files(root: str) -> None:
    store = CacheStore(root)
    writer = store.writer(fingerprint(3))
    half = writer.open("b.bin")

    def build() -> None:
        with writer:
            writer.write_bytes("a.bin", b"complete")
            half.write(b"half")
            raise RuntimeError("build failed")

    with pytest.raises(RuntimeError, match="build failed"):
        build()
    assert half.closed
    assert store.lookup(fingerprint(3)) is None
    assert store.ls() == []
    assert store.clean_tmp(older_than=0) == ()  # nothing was left behind to clean
    with pytest.raises(CacheWriterError, match="aborted"):
        _ = writer.entry


def test_files_left_open_are_closed_and_recorded(root: str) -> None:
    store = CacheStore(root)
    with store.writer(fingerprint(4)) as writer:
        writer.open("left-open.bin").write(b"x" * 10)
    entry = writer.entry
    assert entry.files == ("left-open.bin",)
    assert entry.size == 10


def test_metadata_known_after_writing_is_added(root: str) -> None:
    store = CacheStore(root)
    with store.writer(fingerprint(13), metadata={"transform": "map"}) as writer:
        writer.write_bytes(DATA, b"rows")
        writer.update_metadata({"num_rows": 4})
    assert writer.entry.metadata == {"transform": "map", "num_rows": 4}
    with pytest.raises(CacheWriterError, match="committed"):
        writer.update_metadata({"late": True})


def test_an_entry_without_files_is_allowed(root: str) -> None:
    store = CacheStore(root)
    with store.writer(fingerprint(5), metadata={"num_rows": 0}):
        pass
    entry = store.lookup(fingerprint(5))
    assert entry is not None
    assert entry.files == ()


@pytest.mark.parametrize(
    "name", ["", ".hidden", "a/b", "../x", "manifest.json", "last-used", "-x", "a" * 201]
)
def test_bad_file_names_are_refused(tmp_path: Path, name: str) -> None:
    writer = CacheStore(tmp_path).writer(fingerprint(6))
    with pytest.raises(CacheWriterError, match="Invalid cache file name"):
        writer.open(name)
    writer.abort()


def test_a_file_cannot_be_written_twice(tmp_path: Path) -> None:
    with CacheStore(tmp_path).writer(fingerprint(7)) as writer:
        writer.write_bytes("a.bin", b"1")
        with pytest.raises(CacheWriterError, match="already opened"):
            writer.open("a.bin")


def test_a_committed_writer_cannot_write(tmp_path: Path) -> None:
    with CacheStore(tmp_path).writer(fingerprint(8)) as writer:
        pass
    with pytest.raises(CacheWriterError, match="committed"):
        writer.open("late.bin")


def test_write_files_are_write_only_streams(tmp_path: Path) -> None:
    with CacheStore(tmp_path).writer(fingerprint(9)) as writer, writer.open("a.bin") as file:
        assert file.write(memoryview(b"abc")) == 3
        assert file.tell() == 3
        assert not file.seekable()
        assert not file.readable()


def test_metadata_must_be_json(tmp_path: Path) -> None:
    store = CacheStore(tmp_path)
    with pytest.raises(CacheMetadataError, match=r"not JSON data.*'features'"):
        store.writer(fingerprint(10), metadata={"features": {1, 2}})
    with pytest.raises(CacheMetadataError):
        store.writer(fingerprint(10), metadata={"x": float("nan")})
    with pytest.raises(CacheMetadataError):
        store.writer(fingerprint(10), metadata={1: "a"})  # type: ignore[dict-item]
    assert isinstance(CacheMetadataError("x"), TypeError)


@pytest.mark.parametrize("bad", ["abc", "0" * 31, "G" * 32, "A" * 32, "../" + "0" * 29, 3])
def test_fingerprints_are_checked(tmp_path: Path, bad: object) -> None:
    store = CacheStore(tmp_path)
    with pytest.raises(InvalidFingerprintError, match="32 lowercase hexadecimal"):
        store.writer(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Invalid fingerprint"):
        store.lookup(bad)  # type: ignore[arg-type]


def test_two_writers_of_one_fingerprint_publish_one_entry(root: str) -> None:
    store = CacheStore(root)
    with store.writer(fingerprint(11), metadata={"by": "first"}) as first:
        first.write_bytes("a.bin", b"first")
        with store.writer(fingerprint(11), metadata={"by": "second"}) as second:
            second.write_bytes("a.bin", b"second")
    # The second finished first and won; the first reuses it instead of mixing files.
    assert first.entry == second.entry
    assert first.entry.metadata == {"by": "second"}
    with first.entry.open("a.bin") as file:
        assert file.read() == b"second"
    assert [info.fingerprint for info in store.ls()] == [fingerprint(11)]
    assert store.clean_tmp(older_than=0) == ()


def test_a_live_writer_is_not_disturbed_by_cleaning(root: str) -> None:
    store = CacheStore(root)
    with store.writer(fingerprint(12)) as writer:
        writer.write_bytes("a.bin", b"a")
        assert store.clean_tmp(older_than=0) == ()
        assert store.gc(0).removed_garbage == ()
        writer.write_bytes("b.bin", b"b")
    assert store.lookup(fingerprint(12)) is not None


def test_unknown_tmp_items_go_only_after_the_grace_period(tmp_path: Path) -> None:
    store = CacheStore(tmp_path)
    store.clean_tmp()
    junk = tmp_path / "tmp" / "junk-from-elsewhere"
    junk.mkdir(parents=True)
    (junk / "part").write_bytes(b"x")
    assert store.clean_tmp(older_than=3600) == ()
    old = time.time() - 7200
    for path in (junk, junk / "part"):
        os.utime(path, (old, old))
    assert store.clean_tmp(older_than=3600) == (str(junk),)
    assert not junk.exists()


# -- kill -9 ----------------------------------------------------------------------------------


def _check_after_kill(spec: str, seed: str) -> tuple[int, bool]:
    """Every entry the killed writer may have touched is absent or complete and correct.

    Returns how many were published and whether tmp/ garbage was found (and collected).
    """
    store = open_store(spec, checksums="always")
    published = 0
    number = 0
    while (entry := store.lookup(fingerprint_for(seed, number))) is not None:
        with entry:
            expected = entry_content(entry.fingerprint)
            assert entry.files == tuple(sorted(expected))
            for name, data in expected.items():
                with entry.open(name) as file:
                    assert file.read() == data
        published += 1
        number += 1
    # The writer works in order: nothing after the first miss was published.
    assert store.lookup(fingerprint_for(seed, number + 1)) is None
    assert {info.fingerprint for info in store.ls()} >= {
        fingerprint_for(seed, n) for n in range(published)
    }
    garbage = store.clean_tmp() + (store.clean_tmp(older_than=0) if not store.is_local else ())
    folder = Path(spec.removeprefix("dirfs:"))
    assert os.listdir(folder / "tmp") == [], "a dead writer's tmp/ folder was not collected"
    # On object stores a killed publish can leave files under objects/ without manifest.json:
    # invisible to readers, and collected too.
    assert all((entry / "manifest.json").exists() for entry in folder.glob("objects/*/*"))
    return published, bool(garbage)


def _kill_writers_at_random(spec: str, rounds: int, seed: int) -> None:
    rng = random.Random(seed)
    context = multiprocessing.get_context("fork")  # a real process, started without re-importing
    published = garbage_rounds = 0
    window = 0.25  # kill within this many seconds of the writer starting
    for round_number in range(rounds * 3):
        if round_number >= rounds and published and garbage_rounds:
            break
        ready = context.Event()
        process = context.Process(
            target=write_forever, args=(spec, f"round{round_number}", ready.set), daemon=True
        )
        process.start()
        assert ready.wait(30)
        time.sleep(rng.uniform(0.0, window))
        assert process.pid is not None
        os.kill(process.pid, signal.SIGKILL)
        process.join()
        assert process.exitcode == -signal.SIGKILL
        count, garbage = _check_after_kill(spec, f"round{round_number}")
        published += count
        garbage_rounds += garbage
        if not published:  # a loaded machine: no write finished yet, so wait longer
            window *= 1.5
    assert published > 0
    assert garbage_rounds > 0  # some kills did land mid-write


@pytest.mark.slow
def test_kill_9_at_random_moments_never_leaves_a_partial_entry(tmp_path: Path) -> None:
    _kill_writers_at_random(str(tmp_path / "cache"), rounds=24, seed=20240531)


@pytest.mark.slow
def test_kill_9_on_an_object_store_never_leaves_a_partial_entry(tmp_path: Path) -> None:
    # The same, through fsspec without atomic directory rename: manifest.json is the commit point.
    _kill_writers_at_random(f"dirfs:{tmp_path / 'cache'}", rounds=12, seed=7)


# -- a dead writer's tmp/ folder, taken over ----------------------------------------------------


def _tmp_items(spec: str) -> list[str]:
    tmp = Path(spec.removeprefix("dirfs:")) / "tmp"
    return sorted(os.listdir(tmp)) if tmp.exists() else []


def _start_writer(spec: str, fp: str, how: str) -> subprocess.Popen[str]:
    writer = start_worker("write-and-wait", spec, fp, how)
    assert writer.stdout is not None
    line = writer.stdout.readline()
    assert line == "written\n", f"{line!r}: {writer.stderr.read() if writer.stderr else ''}"
    return writer


@pytest.mark.parametrize("how", ["get-or-create", "writer"])
@pytest.mark.parametrize("backend", ["local", "object-store"])
def test_the_next_writer_of_a_fingerprint_removes_a_killed_writer_s_files(
    tmp_path: Path, backend: str, how: str
) -> None:
    spec = str(tmp_path / "cache") if backend == "local" else f"dirfs:{tmp_path / 'cache'}"
    fp = fingerprint(21)
    killed = _start_writer(spec, fp, how)
    killed.send_signal(signal.SIGKILL)
    killed.communicate()
    (left,) = _tmp_items(spec)
    assert left.startswith(f"{fp}-{killed.pid}_")
    store = open_store(spec)
    if how == "get-or-create":
        store.get_or_create(fp, write_entry).close()
    else:
        with store.writer(fp) as writer:
            write_entry(writer)
        writer.entry.close()
    assert _tmp_items(spec) == []  # without waiting for gc


@pytest.mark.parametrize("how", ["get-or-create", "writer"])
def test_a_live_concurrent_writer_s_files_are_never_removed(tmp_path: Path, how: str) -> None:
    spec = str(tmp_path / "cache")
    fp = fingerprint(22)
    live = _start_writer(spec, fp, "writer")
    try:
        (live_folder,) = _tmp_items(spec)
        written = sorted(os.listdir(Path(spec) / "tmp" / live_folder))
        store = open_store(spec)
        if how == "get-or-create":
            store.get_or_create(fp, write_entry).close()
        else:
            with store.writer(fp) as writer:
                write_entry(writer)
            writer.entry.close()
        assert _tmp_items(spec) == [live_folder]
        assert sorted(os.listdir(Path(spec) / "tmp" / live_folder)) == written
        out, err = live.communicate(input="", timeout=60)
    finally:
        if live.poll() is None:
            live.kill()
            live.communicate()
    assert live.returncode == 0, err
    assert out.splitlines()[-1] == f"published {fp}"
    assert _tmp_items(spec) == []

"""get_or_create across processes: one builder, waiting, stale and hung lock holders."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from dagster_ds.cache import CacheStore, EntryWriter
from dagster_ds.errors import CacheLockTimeoutError
from tests.cache._worker import entry_content, open_store, write_entry
from tests.conftest import s3_requests

from .conftest import fingerprint, start_worker

BACKENDS = ["local", "object-store"]


def _spec(backend: str, folder: Path) -> str:
    return str(folder) if backend == "local" else f"dirfs:{folder}"


def _wait_for_line(process: subprocess.Popen[str], expected: str) -> None:
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith(expected), (
        f"{line!r}; stderr: {process.stderr.read() if process.stderr else ''}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_four_processes_build_once_and_share_the_entry(tmp_path: Path, backend: str) -> None:
    _four_build_once(tmp_path, _spec(backend, tmp_path / "cache"))


def _four_build_once(tmp_path: Path, spec: str, **options: Any) -> None:
    """Four processes ask for one missing entry at once: one builds, all get its entry.

    ``options``: for this process's store on ``spec``.
    """
    counter, go = tmp_path / "builds.txt", tmp_path / "go"
    ready = [tmp_path / f"ready-{n}" for n in range(4)]
    fp = fingerprint(0xC0FFEE)
    workers = [
        start_worker("get-or-create", spec, fp, str(counter), str(flag), str(go)) for flag in ready
    ]
    try:
        deadline = time.monotonic() + 60
        while not all(flag.exists() for flag in ready):
            assert time.monotonic() < deadline, "workers did not start"
            time.sleep(0.01)
        go.touch()  # all four ask at once; the build takes a second
        results = [worker.communicate(timeout=60) for worker in workers]
    finally:
        for worker in workers:
            worker.kill()
    for worker, (_, stderr) in zip(workers, results, strict=True):
        assert worker.returncode == 0, stderr
        assert stderr == ""
    assert len(counter.read_text().splitlines()) == 1  # exactly one build
    manifests = [json.loads(stdout) for stdout, _ in results]
    assert all(manifest == manifests[0] for manifest in manifests)
    assert manifests[0]["fingerprint"] == fp
    entry = open_store(spec, checksums="always", **options).lookup(fp)
    assert entry is not None
    assert entry.manifest == manifests[0]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["flock", "lease", "object-store"])
def test_a_killed_builder_does_not_block_forever(tmp_path: Path, mode: str) -> None:
    spec = _spec("object-store" if mode == "object-store" else "local", tmp_path / "cache")
    fp = fingerprint(0xDEAD)
    holder = start_worker("hang-in-build", spec, fp, mode, "30")
    try:
        _wait_for_line(holder, "building")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate()
    # The holder is dead: its lock (released by the kernel, or a record whose owner is
    # gone) must not make us wait for stale_lock_timeout (30 s), let alone forever.
    store = open_store(spec, lock_mode="lease" if mode == "lease" else "auto", lock_timeout=20)
    built: list[str] = []

    def build(writer: EntryWriter) -> None:
        built.append(writer.fingerprint)
        write_entry(writer)

    entry = store.get_or_create(fp, build)
    assert built == [fp]
    assert entry.fingerprint == fp
    # The dead builder's half-written folder went when this build took the fingerprint over.
    assert os.listdir(tmp_path / "cache" / "tmp") == []


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["lease", "object-store"])
def test_a_hung_builder_keeps_its_lock_while_alive_and_loses_it_when_frozen(
    tmp_path: Path, mode: str
) -> None:
    spec = _spec("object-store" if mode == "object-store" else "local", tmp_path / "cache")
    fp = fingerprint(0xBEEF)
    stale_after = 1.0
    holder = start_worker("hang-in-build", spec, fp, mode, str(stale_after))
    options = {
        "lock_mode": "lease" if mode == "lease" else "auto",
        "stale_lock_timeout": stale_after,
    }
    try:
        _wait_for_line(holder, "building")
        # Alive: its heartbeat keeps the lock well past stale_lock_timeout.
        waiting = open_store(spec, lock_timeout=3 * stale_after, **options)
        with pytest.raises(CacheLockTimeoutError, match="another process is building it"):
            waiting.get_or_create(fp, write_entry)
        # Frozen (alive but no heartbeat): the lock goes stale and is broken.
        holder.send_signal(signal.SIGSTOP)
        entry = open_store(spec, lock_timeout=30, **options).get_or_create(fp, write_entry)
        assert entry.fingerprint == fp
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate()


def test_lock_timeout_error_is_a_timeout_error() -> None:
    assert issubclass(CacheLockTimeoutError, TimeoutError)


def test_get_or_create_builds_once_then_reuses(root: str) -> None:
    store = CacheStore(root)
    calls: list[int] = []

    def build(writer: EntryWriter) -> None:
        calls.append(1)
        writer.write_bytes("a.bin", b"abc")

    first = store.get_or_create(fingerprint(1), build, metadata={"num_rows": 1})
    second = store.get_or_create(fingerprint(1), build, metadata={"num_rows": 1})
    assert calls == [1]
    assert first == second
    assert second.metadata == {"num_rows": 1}


def test_a_failed_build_publishes_nothing_and_releases_the_lock(root: str) -> None:
    store = CacheStore(root, lock_timeout=5)

    def failing(writer: EntryWriter) -> None:
        writer.write_bytes("a.bin", b"partial")
        raise ValueError("tokenizer exploded")

    with pytest.raises(ValueError, match="tokenizer exploded"):
        store.get_or_create(fingerprint(2), failing)
    assert store.lookup(fingerprint(2)) is None
    entry = store.get_or_create(fingerprint(2), lambda w: w.write_bytes("a.bin", b"ok"))
    assert entry.files == ("a.bin",)


def test_flock_mode_needs_a_local_folder() -> None:
    with pytest.raises(ValueError, match="needs a local folder"):
        CacheStore("memory://flock", lock_mode="flock")


def test_lock_files_live_under_locks(tmp_path: Path) -> None:
    store = CacheStore(tmp_path)
    store.get_or_create(fingerprint(3), lambda w: w.write_bytes("a.bin", b"a"))
    assert os.listdir(tmp_path / "locks") == [fingerprint(3)[:2]]


def test_a_build_that_publishes_its_own_fingerprint_does_not_deadlock(root: str) -> None:
    store = CacheStore(root, lock_timeout=10)

    def build(writer: EntryWriter) -> None:
        with store.writer(writer.fingerprint, metadata={"by": "nested"}) as nested:
            nested.write_bytes("a.bin", b"nested")
        writer.write_bytes("a.bin", b"outer")

    entry = store.get_or_create(fingerprint(4), build, metadata={"by": "outer"})
    assert entry.metadata == {"by": "nested"}  # published first; the outer result reuses it
    assert store.gc(0).in_use == (fingerprint(4),)  # nothing left locked or half-done


# -- on S3: locks by conditional writes ---------------------------------------------------------


@pytest.fixture
def s3_spec(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A store on the test S3 server, reachable from worker processes (by the environment)."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_endpoint)
    return "s3://datasets/cache"


def _s3_store(spec: str, **options: Any) -> CacheStore:
    """A store of this process on ``spec`` (its own s3fs instance: not one of another server)."""
    endpoint = os.environ["AWS_ENDPOINT_URL_S3"]
    return open_store(spec, storage_options={"endpoint_url": endpoint}, **options)


def test_on_s3_an_uncontended_build_makes_no_listing_and_one_request_per_step(
    s3_spec: str,
) -> None:
    store = _s3_store(s3_spec)
    fp = fingerprint(0x53)
    files = len(entry_content(fp))
    with s3_requests() as requests:
        store.get_or_create(fp, write_entry).close()
    made = Counter(method for method, _ in requests.made())
    # The lookup, and again under the lock (two 404s); the lock made by a conditional PUT
    # and removed by one DELETE; the files written in place and the manifest (a conditional
    # PUT); a HEAD per file (this process vouches for what it wrote) and one of the bucket
    # (a process checks it once per store). Nothing listed, copied or moved.
    heads = made.pop("HEAD")
    assert made == {"GET": 2, "PUT": files + 2, "DELETE": 1}, made
    assert files <= heads <= files + 1
    assert ("GET", 404) in requests.made()


@pytest.mark.slow
def test_on_s3_four_processes_build_once_and_share_the_entry(tmp_path: Path, s3_spec: str) -> None:
    endpoint = os.environ["AWS_ENDPOINT_URL_S3"]
    _four_build_once(tmp_path, s3_spec, storage_options={"endpoint_url": endpoint})


@pytest.mark.slow
def test_on_s3_a_writer_killed_holding_the_lock_leaves_nothing_visible_and_is_taken_over(
    s3_spec: str,
) -> None:
    fp = fingerprint(0xD1E)
    killed = start_worker("write-and-wait", s3_spec, fp, "get-or-create")
    try:
        _wait_for_line(killed, "written")  # mid-write, the lock held
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.communicate()
    store = _s3_store(s3_spec, checksums="always", lock_timeout=20, stale_lock_timeout=600)
    assert store.lookup(fp) is None  # its half-written files are not an entry
    # Its lock record names a dead process of this host: taken over at once, not after
    # stale_lock_timeout (600 s here), and without listing anything.
    entry = store.get_or_create(fp, write_entry)
    with entry:
        for name, data in entry_content(fp).items():
            with entry.open(name) as file:
                assert file.read() == data
    assert entry.files == tuple(sorted(entry_content(fp)))


@pytest.mark.slow
def test_on_s3_a_hung_builder_keeps_its_lock_while_alive_and_loses_it_when_frozen(
    s3_spec: str,
) -> None:
    fp = fingerprint(0xBEEF)
    stale_after = 1.0
    holder = start_worker("hang-in-build", s3_spec, fp, "object-store", str(stale_after))
    try:
        _wait_for_line(holder, "building")
        # Alive: its heartbeat (a conditional rewrite) keeps the lock past stale_lock_timeout.
        waiting = _s3_store(s3_spec, lock_timeout=3 * stale_after, stale_lock_timeout=1.0)
        with pytest.raises(CacheLockTimeoutError, match="another process is building it"):
            waiting.get_or_create(fp, write_entry)
        # Frozen (alive, no heartbeat): its record stops changing, and is taken over.
        holder.send_signal(signal.SIGSTOP)
        store = _s3_store(s3_spec, lock_timeout=30, stale_lock_timeout=stale_after)
        assert store.get_or_create(fp, write_entry).fingerprint == fp
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate()

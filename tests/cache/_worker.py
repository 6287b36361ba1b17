"""Processes the cache tests start: writers to kill, concurrent builders, lease holders.

Importable (``tests.cache._worker``, for forked children) and runnable as a
script: ``python _worker.py COMMAND ARGS...``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from itertools import count
from typing import Any

import xxhash

from dagster_ds.cache import CacheStore, EntryWriter, LockMode, disable_caching


def open_store(spec: str, **options: Any) -> CacheStore:
    """``dirfs:<folder>``: a local folder seen through fsspec's DirFileSystem, which is not
    a LocalFileSystem, so the store uses its object-store protocol (manifest.json as the
    commit point, lock records with heartbeats) on a folder several processes share."""
    if spec.startswith("dirfs:"):
        from fsspec.implementations.dirfs import DirFileSystem
        from fsspec.implementations.local import LocalFileSystem

        folder = spec.removeprefix("dirfs:")
        os.makedirs(folder, exist_ok=True)
        return CacheStore(
            "", filesystem=DirFileSystem(path=folder, fs=LocalFileSystem()), **options
        )
    return CacheStore(spec, **options)


def fingerprint_for(seed: str, number: int) -> str:
    return xxhash.xxh3_128_hexdigest(f"{seed}-{number}".encode())


def entry_content(fingerprint: str) -> dict[str, bytes]:
    """Deterministic files of an entry: 3 to 5 files, about 3 MB in all."""
    digest = hashlib.sha256(fingerprint.encode()).digest()
    files = 3 + digest[0] % 3
    sizes = [400_000 + 1000 * digest[1 + i] for i in range(files)]
    return {
        f"data-{i:05d}-of-{files:05d}.arrow": hashlib.shake_128(
            f"{fingerprint}{i}".encode()
        ).digest(size)
        for i, size in enumerate(sizes)
    }


def write_entry(writer: EntryWriter) -> None:
    for name, data in entry_content(writer.fingerprint).items():
        with writer.open(name) as file:
            for start in range(0, len(data), 1 << 16):
                file.write(data[start : start + (1 << 16)])


def write_forever(spec: str, seed: str, ready: Callable[[], None]) -> None:
    """Write entries fingerprint_for(seed, 0), (seed, 1)... until killed."""
    store = open_store(spec)
    ready()
    for number in count():
        with store.writer(fingerprint_for(seed, number), metadata={"number": number}) as writer:
            write_entry(writer)


def _wait_for(path: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(path)
        time.sleep(0.005)


def get_or_create(spec: str, fingerprint: str, counter: str, ready: str, go: str) -> None:
    """Wait for the go signal, then get_or_create with an expensive build that counts itself."""
    store = open_store(spec)
    with open(ready, "w"):
        pass
    _wait_for(go)

    def build(writer: EntryWriter) -> None:
        with open(counter, "a") as file:
            file.write(f"{os.getpid()}\n")
        time.sleep(1.0)
        write_entry(writer)

    entry = store.get_or_create(fingerprint, build, metadata={"builder": "worker"})
    print(json.dumps(entry.manifest, sort_keys=True))


def hang_in_build(spec: str, fingerprint: str, lock_mode: str, stale_after: str) -> None:
    """Take the fingerprint's lock, say "building", then never finish."""
    mode: LockMode = "lease" if lock_mode == "lease" else "auto"
    store = open_store(spec, lock_mode=mode, stale_lock_timeout=float(stale_after))

    def build(writer: EntryWriter) -> None:
        print("building", flush=True)
        time.sleep(600)

    store.get_or_create(fingerprint, build)


def write_and_wait(spec: str, fingerprint: str, how: str) -> None:
    """Write part of an entry (through get_or_create or a writer), say "written", wait for
    stdin to close, then finish and print the published entry's fingerprint."""
    store = open_store(spec)
    data = entry_content(fingerprint)

    def build(writer: EntryWriter) -> None:
        name, first = next(iter(data.items()))
        with writer.open(name) as file:
            file.write(first)
        print("written", flush=True)
        sys.stdin.read()
        for name, rest in list(data.items())[1:]:
            writer.write_bytes(name, rest)

    if how == "get-or-create":
        entry = store.get_or_create(fingerprint, build)
    else:
        with store.writer(fingerprint) as writer:
            build(writer)
        entry = writer.entry
    print("published", entry.fingerprint, flush=True)


def hold(spec: str, fingerprint: str, lock_mode: str = "auto") -> None:
    """Look an entry up, memory-map its first file, and hold it until stdin closes."""
    import mmap

    store = open_store(spec, lock_mode="lease" if lock_mode == "lease" else "auto")
    entry = store.lookup(fingerprint)
    assert entry is not None, fingerprint
    path = entry.local_path(entry.files[0])
    assert path is not None
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        print("holding", len(mapped), flush=True)
        sys.stdin.read()
    # Normal exit: the entry's lease is released at interpreter exit.


def write_without_caching(fingerprint: str) -> None:
    disable_caching()
    store = CacheStore()
    with store.writer(fingerprint) as writer:
        writer.write_bytes("data-00000-of-00001.arrow", b"temporary")
    print(json.dumps({"root": store.root, "key": writer.entry.key}))


def main(argv: list[str]) -> None:
    command, *args = argv
    if command == "get-or-create":
        get_or_create(*args)
    elif command == "hang-in-build":
        hang_in_build(*args)
    elif command == "write-and-wait":
        write_and_wait(*args)
    elif command == "hold":
        hold(*args)
    elif command == "write-without-caching":
        write_without_caching(*args)
    elif command == "write-forever":
        write_forever(args[0], args[1], lambda: print("ready", flush=True))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])

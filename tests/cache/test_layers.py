"""Stores read beneath the written one (``read_from=``): read in place, never written."""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from dagster_ds.cache import CacheCorruptionWarning, CacheEntry, CacheStore
from dagster_ds.errors import CacheEntryDamagedError, CacheStoreUnavailableError
from tests import _fast
from tests.conftest import REPO_ROOT, s3_requests

from .conftest import fingerprint

DATA = "data-00000-of-00001.arrow"


def _fill(store: CacheStore, numbers: range) -> list[str]:
    keys = [fingerprint(number) for number in numbers]
    for key in keys:
        store.get_or_create(key, lambda w, key=key: w.write_bytes(DATA, key.encode() * 8)).close()
    return keys


def snapshot(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every file and folder under ``root``: (sha256 of its bytes, mtime_ns, mode).

    A folder's mtime changes when anything is created or removed in it, even briefly.
    """
    found: dict[str, tuple[str, int, int]] = {}
    for path in [root, *root.rglob("*")]:
        stat = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        found[str(path.relative_to(root))] = (digest, stat.st_mtime_ns, stat.st_mode)
    return found


def _read(entry: CacheEntry) -> bytes:
    with entry.open(DATA) as file:
        return file.read()


def _flip_a_byte(path: Path, *, keep_mtime: bool) -> None:
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF
    path.write_bytes(bytes(data))
    if keep_mtime:  # bit rot: the file looks untouched, only its checksum tells
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_entries_beneath_are_read_in_place_and_everything_new_goes_to_the_written_store(
    tmp_path: Path,
) -> None:
    prod, dev = tmp_path / "prod", tmp_path / "dev"
    keys = _fill(CacheStore(prod), range(1, 4))
    before = snapshot(prod)

    store = CacheStore(dev, read_from=[prod])
    found = store.lookup(keys[0])
    assert found is not None
    assert found.url.startswith(str(prod))  # in place: nothing copied
    assert _read(found) == keys[0].encode() * 8
    assert store.holds(found)  # what is stored references it
    reused = store.get_or_create(keys[1], lambda w: pytest.fail("built again"))
    assert _read(reused) == keys[1].encode() * 8
    assert store.manifest(keys[2]) is not None
    new = store.get_or_create(fingerprint(9), lambda w: w.write_bytes(DATA, b"dev"))
    assert new.url.startswith(str(dev))
    assert _read(new) == b"dev"
    # Maintenance acts on the written store only.
    assert [info.fingerprint for info in store.ls()] == [fingerprint(9)]
    assert store.verify().checked == (fingerprint(9),)
    assert store.remove(keys[0], force=True) is False
    store.gc(0)
    found.close()
    reused.close()
    new.close()

    assert snapshot(prod) == before  # not a byte, file, folder or mtime changed


def test_a_store_beneath_may_not_be_the_written_one() -> None:
    with pytest.raises(ValueError, match="each store read beneath it once"):
        CacheStore("memory://layers-same", read_from=["memory://layers-same"])


@pytest.mark.parametrize("when", ["at lookup", "at read"])
def test_a_damaged_entry_beneath_is_reported_left_in_place_and_computed_into_the_written_store(
    tmp_path: Path, when: str
) -> None:
    prod, dev = tmp_path / "prod", tmp_path / "dev"
    keys = _fill(CacheStore(prod), range(1, 3))
    damaged = prod / "objects" / keys[0][:2] / keys[0] / DATA
    # A rewritten file is seen at lookup (its mtime); bit rot only when the file is read.
    _flip_a_byte(damaged, keep_mtime=when == "at read")
    before = snapshot(prod)

    store = CacheStore(dev, read_from=[prod])
    reported = rf"{keys[0]}.*read-only store.*{prod}"
    if when == "at lookup":
        with pytest.warns(CacheCorruptionWarning, match=reported):
            found = store.lookup(keys[0])
        assert found is None
    else:
        entry = store.lookup(keys[0])
        assert entry is not None
        with (
            pytest.raises(CacheEntryDamagedError, match="left there"),
            pytest.warns(CacheCorruptionWarning, match=reported),
        ):
            _read(entry)
    rebuilt = store.get_or_create(keys[0], lambda w: w.write_bytes(DATA, b"recomputed"))
    assert rebuilt.url.startswith(str(dev))
    assert _read(rebuilt) == b"recomputed"
    rebuilt.close()

    assert snapshot(prod) == before  # reported, not moved: the damage is still there
    # Another process over the same stores does not read the damage again.
    script = (
        "import sys, warnings; warnings.simplefilter('error')\n"
        "from dagster_ds.cache import CacheStore\n"
        "store = CacheStore(sys.argv[1], read_from=[sys.argv[2]])\n"
        "print(store.manifest(sys.argv[3]) is None)\n"
        "print(store.lookup(sys.argv[4]).url)\n"
    )
    shutil.rmtree(dev / "objects")  # the recomputed entry gone too: the key stays masked
    printed = _fast.run(
        [sys.executable, "-c", script, str(dev), str(prod), keys[0], keys[1]],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    ).stdout.split()
    assert printed[0] == "True"
    assert printed[1].startswith(str(prod))  # the intact one is still read beneath
    assert snapshot(prod) == before


def test_a_store_beneath_that_is_missing_or_vanishes_fails_clearly_and_is_not_recreated(
    tmp_path: Path,
) -> None:
    prod, dev, moved = tmp_path / "prod", tmp_path / "dev", tmp_path / "moved"
    with pytest.raises(CacheStoreUnavailableError, match=rf"{prod}.*is gone"):
        CacheStore(dev, read_from=[prod])
    keys = _fill(CacheStore(prod), range(1, 3))
    store = CacheStore(dev, read_from=[prod])
    entry = store.lookup(keys[0])
    assert entry is not None
    prod.rename(moved)  # unmounted mid-run
    before = snapshot(moved)

    with pytest.raises(CacheStoreUnavailableError, match=rf"read-only store '{prod}'.*is gone"):
        _read(entry)
    with pytest.raises(CacheStoreUnavailableError, match=str(prod)):
        store.get_or_create(keys[1], lambda w: w.write_bytes(DATA, b"x"))
    assert not prod.exists()  # nothing wrote there, not even a folder
    entry.close()
    assert snapshot(moved) == before


_READ_SENT = """
import pickle, sys
entry = pickle.loads(sys.stdin.buffer.read())
with entry.open("data-00000-of-00001.arrow") as file:
    print(file.read().decode())
"""


def test_an_entry_beneath_sent_to_another_process_is_read_there_and_writes_nothing(
    tmp_path: Path,
) -> None:
    prod, dev = tmp_path / "prod", tmp_path / "dev"
    keys = _fill(CacheStore(prod), range(1, 2))
    before = snapshot(prod)
    entry = CacheStore(dev, read_from=[prod]).lookup(keys[0])
    assert entry is not None
    read = _fast.run(
        [sys.executable, "-c", _READ_SENT],
        input=pickle.dumps(entry),
        capture_output=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert read.stdout.decode().strip() == keys[0] * 8
    entry.close()
    assert snapshot(prod) == before


_GC = """
import sys
from dagster_ds.cache import CacheStore
print(CacheStore(sys.argv[1]).gc(0).evicted)
"""


def test_an_entry_beneath_removed_by_its_own_gc_mid_read_fails_the_read_never_gives_wrong_rows(
    tmp_path: Path,
) -> None:
    prod, dev = tmp_path / "prod", tmp_path / "dev"
    keys = _fill(CacheStore(prod), range(1, 3))
    store = CacheStore(dev, read_from=[prod])
    entry = store.lookup(keys[0])
    assert entry is not None
    # A read-only reader cannot pin: production's gc (another process) evicts the entry.
    evicted = _fast.run(
        [sys.executable, "-c", _GC, str(prod)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    ).stdout
    assert keys[0] in evicted
    with pytest.raises(CacheEntryDamagedError, match="removed or replaced"):
        _read(entry)
    entry.close()
    rebuilt = store.get_or_create(keys[0], lambda w: w.write_bytes(DATA, b"recomputed"))
    assert rebuilt.url.startswith(str(dev))
    rebuilt.close()


def _objects(fs: Any, root: str) -> dict[str, tuple[Any, Any]]:
    """Every object under ``root``: (ETag, size)."""
    return {
        name: (info.get("ETag"), info.get("size"))
        for name, info in fs.find(root, detail=True, withdirs=False).items()
    }


def test_a_store_beneath_on_s3_gets_no_put_or_delete(s3_endpoint: str, tmp_path: Path) -> None:
    import s3fs

    options: dict[str, Any] = {"endpoint_url": s3_endpoint}
    prod = "s3://datasets/prod"
    keys = _fill(CacheStore(prod, storage_options=options), range(1, 4))
    fs: Any = s3fs.S3FileSystem(skip_instance_cache=True, endpoint_url=s3_endpoint)
    damaged = f"datasets/prod/objects/{keys[2][:2]}/{keys[2]}/{DATA}"
    fs.pipe(damaged, b"x" * fs.size(damaged))  # the same size, other bytes
    before = _objects(fs, prod)

    with s3_requests() as requests:
        store = CacheStore(tmp_path / "dev", read_from=[prod], read_from_options=options)
        for key in keys[:2]:
            entry = store.get_or_create(key, lambda w: pytest.fail("built again"))
            assert _read(entry) == key.encode() * 8
            entry.close()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            entry = store.lookup(keys[2])
            assert entry is not None
            with pytest.raises(CacheEntryDamagedError):
                _read(entry)
        assert any(keys[2] in str(warning.message) for warning in caught)
        rebuilt = store.get_or_create(keys[2], lambda w: w.write_bytes(DATA, b"dev"))
        assert rebuilt.url.startswith(str(tmp_path / "dev"))
        rebuilt.close()
        store.lookup(fingerprint(99))  # a miss beneath
    methods = {method for method, _ in requests.made()}
    assert methods, "no request reached the store beneath"
    assert methods <= {"GET", "HEAD"}, requests.made()  # no PUT, POST or DELETE
    assert _objects(fs, prod) == before

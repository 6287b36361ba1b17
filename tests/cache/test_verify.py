"""Corrupt entries: detected (sizes always, checksums per policy), quarantined, recomputed.

A lookup reads the manifest; locally it also stats the files (a file rewritten
since publication is checksummed then). Object stores check a file when it is read.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
from fsspec.core import url_to_fs

from dagster_ds.cache import CacheCorruptionWarning, CacheStore, ChecksumPolicy
from dagster_ds.errors import CacheEntryDamagedError, CacheFormatError, DagsterDsWarning
from tests import _fast

from .conftest import fingerprint

DATA = "data-00000-of-00001.arrow"
PAYLOAD = bytes(range(256)) * 64


def _write(store: CacheStore, number: int = 1) -> str:
    fp = fingerprint(number)
    with store.writer(fp, metadata={"num_rows": 64}) as writer:
        writer.write_bytes(DATA, PAYLOAD)
        writer.write_bytes("data-extra.arrow", b"second file")
    writer.entry.close()
    return fp


def _rewrite(root: str, path: str, change: str) -> None:
    """Damage a cache file the way a disk or a careless tool would."""
    fs, base = url_to_fs(root)
    full = f"{base}/{path}"
    data = fs.cat_file(full)
    if change == "truncate":
        data = data[: len(data) // 2]
    else:  # flip one byte, same size
        data = data[:100] + bytes([data[100] ^ 0xFF]) + data[101:]
    fs.pipe_file(full, data)


def _quarantined(root: str) -> list[str]:
    fs, base = url_to_fs(root)
    return [p.rstrip("/").rpartition("/")[2] for p in fs.ls(f"{base}/quarantine", detail=False)]


def _entry_path(fp: str, name: str = DATA) -> str:
    return f"objects/{fp[:2]}/{fp}/{name}"


def _missed_as_damaged(store: CacheStore, fp: str, name: str = DATA) -> None:
    """The damaged entry ``fp`` is a miss: at lookup locally, at the file's first read elsewhere."""
    if store.is_local:
        assert store.lookup(fp) is None
        return
    entry = store.lookup(fp)  # the manifest alone (checksums="always": every file)
    if entry is None:
        return
    with pytest.raises(CacheEntryDamagedError, match="damaged"):
        entry.open(name)
    assert store.lookup(fp) is None


@pytest.mark.parametrize("change", ["truncate", "flip"])
def test_a_damaged_file_is_detected_quarantined_and_reported_as_a_miss(
    root: str, change: str
) -> None:
    store = CacheStore(root)
    fp = _write(store)
    _rewrite(root, _entry_path(fp), change)
    with pytest.warns(CacheCorruptionWarning, match=rf"{fp}.*is corrupt.*{DATA}") as caught:
        _missed_as_damaged(store, fp)
    message = str(caught[0].message)
    assert ("bytes, the manifest says" if change == "truncate" else "checksum") in message
    assert "quarantine" in message
    assert [name.split("-")[0] for name in _quarantined(root)] == [fp]
    assert store.lookup(fp) is None  # gone, no second warning
    assert store.ls() == []


def test_corruption_warning_is_a_dagster_ds_warning() -> None:
    assert issubclass(CacheCorruptionWarning, DagsterDsWarning)


def test_get_or_create_recomputes_a_corrupt_entry(root: str) -> None:
    store = CacheStore(root)
    fp = _write(store)
    _rewrite(root, _entry_path(fp), "flip")
    with pytest.warns(CacheCorruptionWarning):
        _missed_as_damaged(store, fp)
    entry = store.get_or_create(fp, lambda w: w.write_bytes(DATA, PAYLOAD))
    with entry.open(DATA) as file:
        assert file.read() == PAYLOAD
    assert CacheStore(root, checksums="always").verify().ok


@pytest.mark.parametrize(
    ("policy", "flip_detected"), [("first-use", True), ("always", True), ("never", False)]
)
def test_checksum_policy(root: str, policy: ChecksumPolicy, flip_detected: bool) -> None:
    store = CacheStore(root, checksums=policy)
    fp = _write(store)
    entry = store.lookup(fp)
    assert entry is not None
    with entry.open(DATA) as file:  # verified (first use) and fine
        file.read()
    entry.close()
    _rewrite(root, _entry_path(fp), "flip")
    if flip_detected:
        # "first-use" re-checks because the file changed since it was checked.
        with pytest.warns(CacheCorruptionWarning):
            _missed_as_damaged(store, fp)
    else:
        entry = store.lookup(fp)  # sizes only: a same-size flip is not seen...
        assert entry is not None
        with entry.open(DATA) as file:
            file.read()
        entry.close()
        report = store.verify()  # ...but verify() reads every byte
        assert not report.ok
        assert list(report.corrupt) == [fp]
        assert store.lookup(fp) is None


def test_a_truncated_file_is_caught_even_without_checksums(root: str) -> None:
    store = CacheStore(root, checksums="never")
    fp = _write(store)
    _rewrite(root, _entry_path(fp, "data-extra.arrow"), "truncate")
    with pytest.warns(CacheCorruptionWarning, match="data-extra.arrow has 5 bytes"):
        _missed_as_damaged(store, fp, "data-extra.arrow")


def test_another_process_verifies_on_first_use(tmp_path: Path) -> None:
    # Damage made before a process starts is found by that process's first lookup.
    root = str(tmp_path / "cache")
    fp = _write(CacheStore(root))
    _rewrite(root, _entry_path(fp), "flip")
    code = (
        "import warnings\n"
        "from dagster_ds.cache import CacheStore\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    assert CacheStore({root!r}).lookup({fp!r}) is None\n"
        "print([type(w.message).__name__ for w in caught])\n"
    )
    done = _fast.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['CacheCorruptionWarning']"


@pytest.mark.parametrize(
    "manifest",
    [b"{not json", b"[]", b'{"format_version": 1}', json.dumps({"format_version": "1"}).encode()],
)
def test_a_broken_manifest_is_corruption(root: str, manifest: bytes) -> None:
    store = CacheStore(root)
    fp = _write(store)
    fs, base = url_to_fs(root)
    fs.pipe_file(f"{base}/{_entry_path(fp, 'manifest.json')}", manifest)
    with pytest.warns(CacheCorruptionWarning, match="manifest.json"):
        assert store.lookup(fp) is None


def test_a_manifest_for_another_fingerprint_is_corruption(tmp_path: Path) -> None:
    store = CacheStore(tmp_path)
    fp = _write(store)
    other = fingerprint(2)
    (tmp_path / "objects" / other[:2]).mkdir(exist_ok=True)
    (tmp_path / "objects" / fp[:2] / fp).rename(tmp_path / "objects" / other[:2] / other)
    with pytest.warns(CacheCorruptionWarning, match="is for fingerprint"):
        assert store.lookup(other) is None


def test_a_newer_format_is_an_error_not_corruption(tmp_path: Path) -> None:
    store = CacheStore(tmp_path)
    fp = _write(store)
    path = tmp_path / _entry_path(fp, "manifest.json")
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps({**manifest, "format_version": 99}))
    with pytest.raises(CacheFormatError, match=r"format 99.*Upgrade dagster_ds"):
        store.lookup(fp)
    assert path.exists()  # left alone for the newer version


def test_verify_one_entry_all_entries_and_missing_ones(root: str) -> None:
    store = CacheStore(root)
    good, bad = _write(store, 1), _write(store, 2)
    _rewrite(root, _entry_path(bad), "flip")
    assert store.verify(good).checked == (good,)
    report = store.verify()
    assert report.checked == (good,)
    assert set(report.corrupt) == {bad}
    assert "checksum" in report.corrupt[bad][0]
    assert store.verify(bad).missing == (bad,)  # quarantined by the first verify
    assert store.verify().ok


def test_the_cache_never_unpickles() -> None:
    package = Path(__file__).parents[2] / "dagster_ds" / "cache"
    for module in package.glob("*.py"):
        tree = ast.parse(module.read_text())
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in (
                node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")]
            )
        }
        assert not imported & {"pickle", "dill", "cloudpickle", "marshal", "shelve"}, module


def test_manifest_reads_what_an_entry_records_without_vouching_for_its_data(root: str) -> None:
    store = CacheStore(root)
    fp = _write(store)
    used = {info.fingerprint: info.last_used for info in store.ls()}
    _rewrite(root, _entry_path(fp), "flip")
    manifest = store.manifest(fp)
    assert manifest is not None
    assert manifest.metadata == {"num_rows": 64}
    assert manifest.size == len(PAYLOAD) + len(b"second file")
    fs, base = url_to_fs(root)
    assert not fs.exists(f"{base}/quarantine")  # a report, not a check: lookup checks
    assert {info.fingerprint: info.last_used for info in store.ls()} == used  # not a use
    with pytest.warns(CacheCorruptionWarning):
        _missed_as_damaged(store, fp)
    assert store.manifest(fp) is None


@pytest.mark.parametrize("damage", ["absent", "garbage", "another fingerprint"])
def test_manifest_is_none_when_there_is_no_readable_manifest_for_the_key(
    root: str, damage: str
) -> None:
    store = CacheStore(root)
    fp = _write(store)
    fs, base = url_to_fs(root)
    manifest = f"{base}/{_entry_path(fp, 'manifest.json')}"
    if damage == "absent":
        fs.rm_file(manifest)
    elif damage == "garbage":
        fs.pipe_file(manifest, b"{not json")
    else:
        other = fingerprint(2)
        fs.pipe_file(manifest, fs.cat_file(manifest).replace(fp.encode(), other.encode()))
    assert store.manifest(fp) is None
    assert store.manifest(fingerprint(3)) is None

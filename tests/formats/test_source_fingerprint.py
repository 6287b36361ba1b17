from __future__ import annotations

import os
import shutil
from pathlib import Path

import fsspec

from dagster_ds.formats import ResolvedFile, fingerprint_files, resolve_data_files


def make_files(folder: Path) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(3):
        path = folder / f"part-{i}.jsonl"
        path.write_bytes(b'{"a": %d}\n' % i * 1000)
        paths.append(str(path))
    return paths


def test_one_changed_byte_changes_the_fingerprint(tmp_path: Path) -> None:
    paths = make_files(tmp_path)
    before = fingerprint_files(paths)
    assert len(before) == 32
    data = bytearray(Path(paths[1]).read_bytes())
    data[5000] ^= 1
    Path(paths[1]).write_bytes(bytes(data))
    assert fingerprint_files(paths) != before


def test_same_size_same_mtime_rewrite_is_still_seen(tmp_path: Path) -> None:
    paths = make_files(tmp_path)
    before = fingerprint_files(paths)
    stat = os.stat(paths[0])
    data = bytearray(Path(paths[0]).read_bytes())
    data[0:1] = b"["
    Path(paths[0]).write_bytes(bytes(data))
    os.utime(paths[0], ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert fingerprint_files(paths) != before


def test_touching_mtime_keeps_the_fingerprint(tmp_path: Path) -> None:
    paths = make_files(tmp_path)
    before = fingerprint_files(paths)
    for path in paths:
        os.utime(path, ns=(1, 1_000_000_000))
    assert fingerprint_files(paths) == before
    assert fingerprint_files(resolve_data_files(str(tmp_path))["train"]) == before


def test_order_counts_location_does_not(tmp_path: Path) -> None:
    paths = make_files(tmp_path / "a")
    assert fingerprint_files(paths) != fingerprint_files(list(reversed(paths)))
    moved = shutil.copytree(tmp_path / "a", tmp_path / "b")
    assert fingerprint_files(sorted(map(str, Path(moved).iterdir()))) == fingerprint_files(paths)


def test_remote_files_use_content_or_the_storage_checksum(tmp_path: Path, memory_root: str) -> None:
    paths = make_files(tmp_path)
    fs = fsspec.filesystem("memory")
    urls = []
    for path in paths:
        url = f"{memory_root}/{Path(path).name}"
        fs.pipe(url, Path(path).read_bytes())
        urls.append(url)
    # The memory filesystem reports no checksum: its files count by content, as local ones.
    assert fingerprint_files(urls) == fingerprint_files(paths)
    fs.pipe(urls[2], b"changed")
    assert fingerprint_files(urls) != fingerprint_files(paths)

    tagged = [ResolvedFile(url, size=10, checksum=f"ETag:{i}") for i, url in enumerate(urls)]
    by_etag = fingerprint_files(tagged)
    fs.pipe(urls[0], b"not read: the ETag stands for the content")
    assert fingerprint_files(tagged) == by_etag
    retagged = [tagged[0], tagged[1], ResolvedFile(urls[2], size=10, checksum="ETag:new")]
    assert fingerprint_files(retagged) != by_etag

"""Data files inside .zip and .tar archives, read in place, as `datasets` reads them."""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from dagster_ds import DataFilesNotFoundError, MalformedFileError, load_dataset


def _archives(tmp_path: Path) -> dict[str, Path]:
    members = {"a.jsonl": '{"a": 1}\n{"a": 2}\n', "sub/b.jsonl": '{"a": 3}\n'}
    for name, text in members.items():
        (tmp_path / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / name).write_text(text)
    with zipfile.ZipFile(tmp_path / "data.zip", "w") as archive:
        for name in members:
            archive.write(tmp_path / "src" / name, name)
        archive.writestr("__MACOSX/._a.jsonl", "junk")
    paths = {"zip": tmp_path / "data.zip"}
    for suffix, mode in [(".tar", "w"), (".tar.gz", "w:gz")]:
        path = tmp_path / f"data{suffix}"
        with tarfile.open(path, mode) as archive:  # type: ignore[call-overload]
            for name in members:
                archive.add(tmp_path / "src" / name, name)
        paths[suffix] = path
    return paths


@pytest.mark.parametrize("kind", ["zip", ".tar", ".tar.gz"])
def test_an_archive_stands_for_its_data_files(
    datasets: ModuleType, tmp_path: Path, kind: str
) -> None:
    path = str(_archives(tmp_path)[kind])
    ours = load_dataset("json", data_files=path, split="train")
    anchor = datasets.load_dataset("json", data_files=path, split="train")
    assert ours.to_dict() == anchor.to_dict() == {"a": [1, 2, 3]}
    streamed = load_dataset("json", data_files=path, split="train", streaming=True)
    assert streamed.to_dict() == {"a": [1, 2, 3]}


def test_a_changed_archive_changes_the_fingerprint(tmp_path: Path) -> None:
    path = _archives(tmp_path)["zip"]
    before = load_dataset("json", data_files=str(path), split="train").fingerprint
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("c.jsonl", '{"a": 4}\n')
    after = load_dataset("json", data_files=str(path), split="train")
    assert after.fingerprint != before
    assert after["a"][:] == [1, 2, 4, 3]


def test_bad_archives_are_named(tmp_path: Path) -> None:
    fake = tmp_path / "fake.zip"
    fake.write_bytes(b"not a zip")
    with pytest.raises(MalformedFileError, match=r"fake\.zip.*not a readable zip archive"):
        load_dataset("json", data_files=str(fake), split="train")
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr(".hidden", "x")
    with pytest.raises(DataFilesNotFoundError, match="holds no data file"):
        load_dataset("json", data_files=str(empty), split="train")

"""Local globs and folders listed with os.scandir find what fsspec finds, with each file's stat."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

import pytest
from fsspec.implementations.local import LocalFileSystem

from dagster_ds.formats._local_files import local_find, local_glob

NAMES = [
    "a.jsonl",
    "b.csv",
    ".hidden.jsonl",
    "_private.jsonl",
    "README.md",
    "run[1].jsonl",
    "sub/c.jsonl",
    "sub/deeper/d.jsonl",
    "sub/deeper/deepest/e.jsonl",
    "sub/.dot/f.jsonl",
    "_tmp/g.csv",
    "other/h.jsonl",
]
PATTERNS = [
    "*",
    "*.jsonl",
    "?.csv",
    "[ab].*",
    "[!a]*",
    "run[[]1[]].jsonl",
    "*/*.jsonl",
    "*/*/*",
    "sub/*",
    "s?b/**",
    "**",
    "**/*.jsonl",
    "sub/**/d*",
    "**/.*",
    "*/deeper/**",
    "missing/*",
    "a.jsonl/*",
]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for name in NAMES:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name * 3)
    (root / "link.jsonl").symlink_to(root / "a.jsonl")
    (root / "linked-folder").symlink_to(root / "sub")
    (root / "broken.jsonl").symlink_to(root / "nothing.jsonl")
    (root / "empty").mkdir()
    return root


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_glob_finds_the_regular_files_fsspec_finds_in_its_order(tree: Path, pattern: str) -> None:
    path = f"{tree}/{pattern}"
    matches = cast(dict[str, dict[str, Any]], LocalFileSystem().glob(path, detail=True))
    expected = [name for name, info in matches.items() if info["type"] == "file"]
    found = local_glob(path)
    assert [name for name, _ in found] == expected
    assert all(stat == os.stat(name) for name, stat in found)


@pytest.mark.parametrize("folder", ["", "/sub", "/empty", "/linked-folder"])
def test_a_folder_holds_what_fsspec_finds_under_it_in_its_order(tree: Path, folder: str) -> None:
    path = f"{tree}{folder}"
    found = local_find(path)
    assert [name for name, _ in found] == LocalFileSystem().find(path)
    stats = {os.path.basename(name): stat for name, stat in found}
    if not folder:
        assert stats["broken.jsonl"] is None
        assert stats["linked-folder"] == os.stat(tree / "sub")
        assert stats["link.jsonl"] == os.stat(tree / "a.jsonl")


def test_a_double_star_inside_a_name_is_refused_as_fsspec_refuses_it(tree: Path) -> None:
    with pytest.raises(ValueError, match=r"\*\*"):
        local_glob(f"{tree}/a**.jsonl")

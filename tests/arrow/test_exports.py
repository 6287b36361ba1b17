"""Exports, cache clean-up, progress bars and non-local caches."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import sys
import termios
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest

from dagster_ds import Dataset
from dagster_ds.cache import CacheStore
from dagster_ds.features import ClassLabel, Features, Value
from tests import _fast
from tests.conftest import REPO_ROOT


@pytest.fixture
def ds() -> Dataset:
    features = Features({"label": ClassLabel(names=["a", "b"]), "text": Value("string")})
    return Dataset.from_dict(
        {"label": [0, 1, 1], "text": ["x", "y, z", 'q"uote']}, features=features
    )


def test_exports_are_read_back_by_the_anchor(ds: Dataset, tmp_path: Path) -> None:
    subset = ds.select([2, 0])
    assert subset.to_parquet(str(tmp_path / "d.parquet")) == (tmp_path / "d.parquet").stat().st_size
    assert subset.to_csv(str(tmp_path / "d.csv")) == (tmp_path / "d.csv").stat().st_size
    assert subset.to_json(str(tmp_path / "d.jsonl")) == (tmp_path / "d.jsonl").stat().st_size
    parquet = datasets.Dataset.from_parquet(str(tmp_path / "d.parquet"))
    assert parquet.to_list() == subset.to_list()
    label = parquet.features["label"]
    assert isinstance(label, datasets.ClassLabel)
    assert label.names == ["a", "b"]
    assert pq.read_table(tmp_path / "d.parquet").num_rows == 2
    assert datasets.Dataset.from_csv(str(tmp_path / "d.csv")).to_list() == subset.to_list()
    lines = (tmp_path / "d.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == subset.to_list()


def test_cleanup_removes_derived_entries_but_not_the_ones_in_use(ds: Dataset) -> None:
    kept = ds.map(lambda x: {"n": 1})
    ds.map(lambda x: {"n": 2}).filter(lambda x: x["n"] == 2)

    def results() -> set[str]:  # entries holding rows, not records of a transform's outputs
        return {info.fingerprint for info in CacheStore().ls() if info.files}

    assert len(results()) == 3
    assert kept.cleanup_cache_files() == 2
    assert results() == {kept.fingerprint}
    assert kept["n"][:] == [1, 1, 1]


def test_transforms_work_on_a_memory_cache(ds: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAGSTER_DS_CACHE", "memory://dagster-ds-test-cache")
    out = ds.map(lambda x: {"upper": x["text"].upper()}).filter(lambda x: x["label"] == 1)
    assert out["upper"][:] == ["Y, Z", 'Q"UOTE']
    assert "dagster-ds-test-cache" in out.cache_files[0]["filename"]
    assert not Path(out.cache_files[0]["filename"]).exists()


def _stderr_on_a_terminal(source: str, **env: str) -> str:
    """Run ``source`` with stderr on a pseudo-terminal and return what it printed there."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    inherited = {k: v for k, v in os.environ.items() if k != "DAGSTER_DS_DISABLE_PROGRESS_BARS"}
    environment = {**inherited, "PYTHONPATH": str(REPO_ROOT), **env}
    process = _fast.Popen([sys.executable, "-c", source], stderr=terminal, env=environment)
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=60)
    os.close(controller)
    return b"".join(chunks).decode(errors="replace")


PROGRESS = (
    "from dagster_ds import Dataset\n"
    "Dataset.from_dict({'a': list(range(3000))}).map(lambda x: x, desc='Squaring')\n"
)


def test_progress_bars_show_on_a_terminal_only_and_can_be_disabled() -> None:
    assert "Squaring" in _stderr_on_a_terminal(PROGRESS)
    assert "Squaring" not in _stderr_on_a_terminal(PROGRESS, DAGSTER_DS_DISABLE_PROGRESS_BARS="1")
    piped = _fast.run(
        [sys.executable, "-c", PROGRESS],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert piped.stderr == ""

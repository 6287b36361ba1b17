from __future__ import annotations

import uuid
from collections.abc import Iterator

import fsspec
import pyarrow as pa
import pytest


@pytest.fixture
def memory_root() -> Iterator[str]:
    """A fresh folder on fsspec's in-memory filesystem, removed afterwards."""
    root = f"memory://formats-{uuid.uuid4().hex[:12]}"
    yield root
    fs = fsspec.filesystem("memory")
    if fs.exists(root):
        fs.rm(root, recursive=True)


@pytest.fixture
def sample_table() -> pa.Table:
    return pa.table(
        {
            "id": pa.array([1, 2, None, 4, 5], pa.int64()),
            "score": pa.array([0.5, 2.0, None, -1.25, 1e20], pa.float64()),
            "text": pa.array(["plain", "", None, 'quote " comma , newline \n end', "ünï 字"]),
            "flag": pa.array([True, False, None, True, False]),
        }
    )

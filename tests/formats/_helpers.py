from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa


def read_all(batches: Iterable[pa.RecordBatch]) -> pa.Table:
    return pa.Table.from_batches(list(batches))


def names_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())

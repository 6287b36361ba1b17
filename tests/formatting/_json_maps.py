"""Batched map functions over a `Json` column ``j`` and an int column ``k``: one reads
``j`` (so its values are decoded), the other never touches it."""

from __future__ import annotations

from typing import Any


def read_json(batch: Any) -> Any:
    batch["kind"] = [type(value).__name__ for value in batch["j"]]
    return batch


def skip_json(batch: Any) -> Any:
    batch["k"] = [value * 2 for value in batch["k"]]
    return batch

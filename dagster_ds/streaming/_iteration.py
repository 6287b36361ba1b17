"""Iterating a pipeline while knowing, after every example, the state to resume from."""

from __future__ import annotations

import operator
import sys
from collections.abc import Iterator
from typing import Any

from dagster_ds.errors import InvalidStateError
from dagster_ds.streaming._cursor import Cursor, Position, start_position
from dagster_ds.streaming._node import materialize

STATE_VERSION = 1


class Progress:
    """Where the iteration in progress stands.

    Examples are handed out from a list made per batch (`RecordBatch.to_pylist`);
    how many were consumed is read from the list iterator's remaining length when a
    state is asked for, so tracking costs nothing per example.
    """

    def __init__(self, cursor: Cursor, pipeline: str, epoch: int) -> None:
        self.cursor = cursor
        self.pipeline = pipeline
        self.epoch = epoch
        self._before: Position | None = None
        self._rows: Iterator[Any] | None = None
        self._total = 0

    def handing_out(self, before: Position, rows: Iterator[Any], total: int) -> None:
        """Examples of a batch are handed out from ``rows``; ``before`` is where it began."""
        self._before, self._rows, self._total = before, rows, total

    def batch_done(self) -> None:
        """A whole batch was handed out at once: the cursor's position is exact."""
        self._before, self._rows = None, None

    def position(self) -> Position:
        if self._before is None or self._rows is None:
            return self.cursor.position()
        left = operator.length_hint(self._rows)
        consumed = self._total - left
        return {"state": self._before["state"], "skip": self._before["skip"] + consumed}

    def state_dict(self) -> dict[str, Any]:
        return make_state(self.epoch, self.pipeline, self.position())


def make_state(epoch: int, pipeline: str, position: Position) -> dict[str, Any]:
    """The public state: plain JSON data."""
    return {
        "version": STATE_VERSION,
        "epoch": epoch,
        "pipeline": pipeline,
        "position": materialize(position),
    }


def check_state(state: Any) -> dict[str, Any]:
    """``state`` if it has the shape `make_state` gives, else a clear error."""
    shape = {"version": int, "epoch": int, "pipeline": str, "position": dict}
    if not isinstance(state, dict):
        raise InvalidStateError(
            f"load_state_dict expects the dict state_dict() returned, got "
            f"{type(state).__name__}: {_preview(state)}."
        )
    checked: dict[str, Any] = state  # pyright: ignore[reportUnknownVariableType]
    wrong = [
        key
        for key, kind in shape.items()
        if not isinstance(checked.get(key), kind) or isinstance(checked.get(key), bool)
    ]
    if wrong:
        raise InvalidStateError(
            f"load_state_dict: the state has missing or malformed entries {wrong} (expected "
            f"keys {sorted(shape)}); got {_preview(checked)}. Pass what state_dict() returned."
        )
    if checked["version"] != STATE_VERSION:
        raise InvalidStateError(
            f"load_state_dict: state version {checked['version']} is not supported (this "
            f"version writes {STATE_VERSION}); save the state again with this version."
        )
    return checked


def check_pipeline(state: dict[str, Any], pipeline: str) -> None:
    """Raise `InvalidStateError` when ``state`` was saved from another pipeline shape."""
    if state["pipeline"] != pipeline:
        raise InvalidStateError(
            f"load_state_dict: the state was saved from the pipeline {state['pipeline']!r}, "
            f"but this dataset is {pipeline!r}. Load it into a dataset built the same way "
            "(same sources, shards and operators)."
        )


def start_of(state: dict[str, Any] | None, epoch: int) -> Position:
    """Where an iteration starts: the loaded state's position in its epoch, else the start."""
    if state is not None and state["epoch"] == epoch:
        position: Position = state["position"]
        return position
    return start_position()


class EpochCell:
    """The epoch, in shared memory when torch is imported.

    Persistent ``DataLoader`` workers are forked once and reused every epoch: they
    see `set_epoch` through the shared value.
    """

    def __init__(self) -> None:
        self._value = 0
        self._shared: Any = None
        if "torch" in sys.modules:
            import torch

            self._shared = torch.zeros((), dtype=torch.int64).share_memory_()

    def get(self) -> int:
        return int(self._shared.item()) if self._shared is not None else self._value

    def set(self, epoch: int) -> None:
        self._value = epoch
        if self._shared is not None:
            self._shared.fill_(epoch)


def torch_worker() -> tuple[int, int] | None:
    """``(worker id, number of workers)`` inside a torch DataLoader worker, else None.

    torch is looked at only when it is already imported: this never imports it.
    """
    if "torch" not in sys.modules:
        return None
    from torch.utils.data import get_worker_info

    info = get_worker_info()
    return (info.id, info.num_workers) if info is not None else None


def _preview(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 100 else text[:97] + "..."

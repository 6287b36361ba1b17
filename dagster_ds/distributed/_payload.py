"""The work of one transform as bytes a cluster worker can run: dill, by value.

The user's function travels as dill pickles it (by value for functions of
``__main__`` and lambdas, by reference for importable module functions, which
the worker imports from its own image). What the work holds of the driver's
state is replaced on the way: a `Dataset` by an empty one with the same
columns, features and format (the worker reads its shard from the store), a
progress bar by one that does nothing.
"""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import dill
import pyarrow as pa
import xxhash

from dagster_ds.arrow import Dataset, Shard, ShardWork
from dagster_ds.features import Features


@dataclass(frozen=True)
class Payload:
    """What every task of one transform shares.

    Attributes:
        work: How to compute any output shard of the transform.
        expected_hash: The driver's hash of ``work.recipe`` (None: no recipe).
        root: The store's path or URL.
        storage_options: fsspec options for ``root``.
        read_from: The stores read beneath it, never written (see `CacheStore`).
        read_from_options: fsspec options for ``read_from``.
    """

    work: ShardWork
    expected_hash: str | None
    root: str
    storage_options: Mapping[str, object] | None
    read_from: tuple[str, ...] = ()
    read_from_options: Mapping[str, object] | None = None


class _NoProgress:
    def update(self, n: int = 1) -> None:
        del n

    def close(self) -> None:
        return None


def _empty_dataset(
    schema: pa.Schema, features: Features, output_format: Any, fingerprint: str, split: str | None
) -> Dataset:
    shard = Shard(fingerprint, schema.empty_table())
    dataset = Dataset._from_shards(None, [shard], fingerprint=fingerprint, features=features)  # pyright: ignore[reportPrivateUsage]
    dataset._output_format = output_format  # pyright: ignore[reportPrivateUsage]
    dataset._split = split  # pyright: ignore[reportPrivateUsage]
    return dataset


class _Pickler(dill.Pickler):  # type: ignore[misc]
    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, Dataset):
            return _empty_dataset, (
                obj.data.schema,
                obj._features,  # pyright: ignore[reportPrivateUsage]
                obj._output_format,  # pyright: ignore[reportPrivateUsage]
                obj.fingerprint,
                obj.split,
            )
        tqdm_module = sys.modules.get("tqdm.std")
        if tqdm_module is not None and isinstance(obj, tqdm_module.tqdm):
            return _NoProgress, ()
        return NotImplemented


def dumps(payload: Payload) -> bytes:
    """``payload`` as dill bytes."""
    buffer = io.BytesIO()
    _Pickler(buffer, recurse=True).dump(payload)
    return buffer.getvalue()


def digest(data: bytes) -> str:
    """The name of a payload: xxh3-128 of its bytes."""
    return xxhash.xxh3_128_hexdigest(data)


_DECODED: dict[str, Payload] = {}
_DECODED_LOCK = threading.Lock()
_KEEP = 8


def loads(name: str, data: bytes) -> Payload:
    """The payload of these bytes, decoded once per worker process (the last few kept)."""
    with _DECODED_LOCK:
        found = _DECODED.get(name)
        if found is not None:
            return found
    payload = dill.loads(data)
    assert isinstance(payload, Payload)
    with _DECODED_LOCK:
        if len(_DECODED) >= _KEEP:
            _DECODED.pop(next(iter(_DECODED)))
        _DECODED[name] = payload
    return payload

"""Transforms that reorder or choose rows through an indices mapping, without copying data."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.arrow._results import indices_result, plan
from dagster_ds.arrow._shards import Shard, offsets
from dagster_ds.errors import InvalidArgumentError

if TYPE_CHECKING:
    import numpy as np

    from dagster_ds.arrow._dataset import Dataset


def select_rows(
    dataset: Dataset, indices: Sequence[int] | pa.Array, new_fingerprint: str | None
) -> Dataset:
    """``dataset`` restricted to the rows at ``indices`` (see `Dataset.select`)."""
    import pyarrow.compute as pc

    if (
        isinstance(indices, range)
        and indices.step == 1
        and 0 <= indices.start <= indices.stop <= len(dataset)
    ):
        return _select_range(dataset, indices, new_fingerprint)
    positions = indices if isinstance(indices, pa.Array) else pa.array(list(indices), pa.int64())
    size = len(dataset)
    if len(positions):
        low, high = pc.min_max(positions).values()  # pyright: ignore[reportAttributeAccessIssue]
        if low.as_py() < 0 or high.as_py() >= size:
            raise IndexError(
                f"select: indices must lie in [0, {size}) for a dataset of {size} rows; "
                f"got values from {low.as_py()} to {high.as_py()}."
            )
    transform = plan(dataset, "select", {"indices": positions}, new_fingerprint)
    return indices_result(dataset, transform, lambda: positions.cast(pa.uint64()))


def _select_range(dataset: Dataset, rows: range, new_fingerprint: str | None) -> Dataset:
    """A contiguous selection: the shards it covers, cut (zero-copy), or a mapping slice."""
    positions = pa.array(rows, pa.int64())
    transform = plan(dataset, "select", {"indices": positions}, new_fingerprint)
    mapping = dataset._mapping  # pyright: ignore[reportPrivateUsage]
    if mapping is not None:
        return dataset._from_shards(  # pyright: ignore[reportPrivateUsage]
            dataset,
            dataset._shards,  # pyright: ignore[reportPrivateUsage]
            fingerprint=transform.fingerprint,
            mapping=mapping.slice(rows.start, len(rows)),
            mapping_entries=dataset._mapping_entries,  # pyright: ignore[reportPrivateUsage]
            step=transform.step(),
        )
    shards = dataset._shards  # pyright: ignore[reportPrivateUsage]
    kept: list[Shard] = []
    for shard, first in zip(shards, offsets(shards), strict=False):
        start, stop = max(rows.start, first), min(rows.stop, first + shard.num_rows)
        if start >= stop and kept:
            continue
        if start == first and stop == first + shard.num_rows:
            kept.append(shard)
            continue
        start, stop = start - first, max(stop, start) - first
        fingerprint = transform.for_shard(shard.fingerprint, start=start, stop=stop).fingerprint
        if shard.indices is None:
            kept.append(
                Shard(fingerprint, shard.table.slice(start, stop - start), None, shard.entries)
            )
        else:
            indices = shard.indices.slice(start, stop - start)
            kept.append(Shard(fingerprint, shard.rows, indices, shard.entries))
    non_empty = [shard for shard in kept if shard.num_rows] or kept[:1]
    return dataset._from_shards(  # pyright: ignore[reportPrivateUsage]
        dataset, non_empty, fingerprint=transform.fingerprint, step=transform.step()
    )


def shuffle_rows(
    dataset: Dataset,
    seed: int | None,
    generator: np.random.Generator | None,
    load_from_cache_file: bool,
    new_fingerprint: str | None,
) -> Dataset:
    """``dataset`` in a random order (see `Dataset.shuffle`)."""
    import numpy as np

    if seed is not None and generator is not None:
        raise InvalidArgumentError("shuffle: pass seed or generator, not both.")
    if generator is None:
        generator = np.random.default_rng(seed)
    state = generator.bit_generator.state
    transform = plan(dataset, "shuffle", {"generator_state": state, "seed": seed}, new_fingerprint)
    rng = generator

    def compute() -> pa.Array:
        return pa.array(rng.permutation(len(dataset)), pa.uint64())

    return indices_result(dataset, transform, compute, load_from_cache_file=load_from_cache_file)


def sort_rows(
    dataset: Dataset,
    column_names: str | Sequence[str],
    reverse: bool | Sequence[bool],
    null_placement: str,
    load_from_cache_file: bool,
    new_fingerprint: str | None,
) -> Dataset:
    """``dataset`` ordered by columns (see `Dataset.sort`)."""
    import pyarrow.compute as pc

    names = [column_names] if isinstance(column_names, str) else list(column_names)
    dataset._require_columns(names, "sort(column_names=...)")  # pyright: ignore[reportPrivateUsage]
    flags = [reverse] * len(names) if isinstance(reverse, bool) else list(reverse)
    if len(flags) != len(names):
        raise InvalidArgumentError(
            f"sort: reverse has {len(flags)} values for {len(names)} columns."
        )
    if null_placement not in ("at_start", "at_end", "first", "last"):
        raise InvalidArgumentError(
            f"sort: null_placement={null_placement!r}; use 'at_start' or 'at_end'."
        )
    placement = "at_start" if null_placement in ("at_start", "first") else "at_end"
    keys = [
        (n, "descending" if r else "ascending", placement)
        for n, r in zip(names, flags, strict=True)
    ]
    args = {"column_names": names, "reverse": flags, "null_placement": placement}
    transform = plan(dataset, "sort", args, new_fingerprint)

    def compute() -> pa.Array:
        table = dataset.select_columns(names)._read(slice(None))  # pyright: ignore[reportPrivateUsage]
        # (name, order, null_placement) keys: pyarrow 25+, newer than the stubs.
        return pc.sort_indices(table, sort_keys=keys)  # pyright: ignore[reportCallIssue, reportArgumentType]

    return indices_result(dataset, transform, compute, load_from_cache_file=load_from_cache_file)


def split_sizes(
    size: int, test_size: float | int | None, train_size: float | int | None
) -> tuple[int, int]:
    """The anchor's train/test sizes: a float is a fraction (test rounds up), an int a count."""
    if test_size is None and train_size is None:
        test_size = 0.25
    for name, value in (("test_size", test_size), ("train_size", train_size)):
        if isinstance(value, float) and not 0 < value < 1:
            raise InvalidArgumentError(f"train_test_split: {name}={value} must lie in (0, 1).")
        if isinstance(value, int) and not 0 < value < size:
            raise InvalidArgumentError(f"train_test_split: {name}={value} must lie in (0, {size}).")
    test = math.ceil(test_size * size) if isinstance(test_size, float) else test_size
    train = math.floor(train_size * size) if isinstance(train_size, float) else train_size
    if train is None:
        train = size - (test or 0)
    if test is None:
        test = size - train
    if train + test > size or train <= 0 or test <= 0:
        raise InvalidArgumentError(
            f"train_test_split: {train} train and {test} test rows do not fit a dataset of "
            f"{size} rows; choose smaller sizes."
        )
    return train, test


def train_test_split(
    dataset: Dataset,
    test_size: float | int | None,
    train_size: float | int | None,
    shuffle: bool,
    seed: int | None,
    generator: Any,
) -> dict[str, Dataset]:
    """The two splits of `Dataset.train_test_split`, chosen as the anchor chooses them.

    Without shuffling, train is the first rows and test the next ones; with
    shuffling, test is the start of a permutation and train what follows.
    """
    import numpy as np

    train, test = split_sizes(len(dataset), test_size, train_size)
    if not shuffle:
        return {
            "train": dataset.select(range(train)),
            "test": dataset.select(range(train, train + test)),
        }
    if seed is not None and generator is not None:
        raise InvalidArgumentError("train_test_split: pass seed or generator, not both.")
    rng = generator if generator is not None else np.random.default_rng(seed)
    permutation = pa.array(rng.permutation(len(dataset)), pa.int64())
    return {
        "train": dataset.select(permutation.slice(test, train)),
        "test": dataset.select(permutation.slice(0, test)),
    }

"""concatenate_datasets and interleave_datasets, for map-style and streaming datasets alike.

Example:
    >>> from dagster_ds import Dataset, IterableDataset, interleave_datasets
    >>> a = IterableDataset.from_dict({"x": [0, 1, 2]})
    >>> b = IterableDataset.from_dict({"x": [10, 11, 12]})
    >>> [row["x"] for row in interleave_datasets([a, b])]
    [0, 10, 1, 11, 2]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import pyarrow as pa

from dagster_ds.arrow import Dataset
from dagster_ds.errors import DuplicateColumnError, InvalidArgumentError
from dagster_ds.features import Features, unify_schemas
from dagster_ds.fingerprint import update_fingerprint
from dagster_ds.formatting import Formatter
from dagster_ds.streaming import STRATEGIES as _STRATEGIES
from dagster_ds.streaming import (
    HorizontalConcat,
    InterleaveNode,
    IterableDataset,
    VerticalConcat,
    random_seed,
)

__all__ = ["concatenate_datasets", "interleave_datasets"]

_DatasetT = TypeVar("_DatasetT", Dataset, IterableDataset)


def concatenate_datasets(
    dsets: Sequence[_DatasetT], split: str | None = None, axis: int = 0
) -> _DatasetT:
    """Concatenate datasets one after the other (``axis=0``) or side by side (``axis=1``).

    All the datasets are map-style `Dataset` objects (the result is one, cached), or
    all are `IterableDataset` objects (the result streams them). Along rows, a column
    missing from some datasets is None there, and columns must otherwise have the
    same types: an `IncompatibleFeaturesError` lists every column that differs.
    Streamed, the result's shards are all the datasets' shards (``num_shards`` is
    their sum). Side by side, the datasets must have the same number of rows and no
    column name in common; streamed, the result has one shard.

    Args:
        dsets: The datasets, all map-style or all streaming.
        split: The split name of the result.
        axis: 0 to concatenate rows, 1 to put columns side by side.

    Returns:
        A dataset of the same kind as the inputs.

    Raises:
        IncompatibleFeaturesError: A column has different types in two datasets.
        DuplicateColumnError: ``axis=1`` and two datasets share a column name.
        RowCountMismatchError: ``axis=1`` and the datasets differ in length.

    Example:
        >>> a = IterableDataset.from_dict({"x": [1, 2]})
        >>> b = IterableDataset.from_dict({"y": ["a", "b"]})
        >>> list(concatenate_datasets([a, b], axis=1))
        [{'x': 1, 'y': 'a'}, {'x': 2, 'y': 'b'}]
    """
    if axis not in (0, 1):
        raise InvalidArgumentError(f"concatenate_datasets: axis must be 0 or 1, got {axis!r}.")
    kind = _kind(dsets, "concatenate")
    if kind is Dataset:
        from dagster_ds.arrow import concatenate_map_style

        result = concatenate_map_style([d for d in dsets if isinstance(d, Dataset)], axis)
        result._split = split  # pyright: ignore[reportPrivateUsage]
        return result  # pyright: ignore[reportReturnType]
    streams = [d for d in dsets if isinstance(d, IterableDataset)]
    features = [d._resolve_features() for d in streams]  # pyright: ignore[reportPrivateUsage]
    if axis == 0:
        unified = unify_schemas([f.arrow_schema for f in features], "concatenate datasets")
        node = VerticalConcat(tuple(d._node for d in streams), unified)  # pyright: ignore[reportPrivateUsage]
        merged = _merged(features, unified.names)
    else:
        names = [name for f in features for name in f]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise DuplicateColumnError(
                f"concatenate_datasets(axis=1): column(s) {duplicates} are duplicated (they "
                "appear in more than one dataset); rename or remove them first "
                "(rename_column, remove_columns)."
            )
        node = HorizontalConcat(tuple(d._node for d in streams))  # pyright: ignore[reportPrivateUsage]
        merged = Features({name: feature for f in features for name, feature in f.items()})
    return _combined(streams, node, merged, split, "concatenate_datasets", {"axis": axis})  # pyright: ignore[reportReturnType]


def interleave_datasets(
    datasets: Sequence[_DatasetT],
    probabilities: Sequence[float] | None = None,
    seed: int | None = None,
    split: str | None = None,
    stopping_strategy: str = "first_exhausted",
) -> _DatasetT:
    """Interleave datasets: one example from each in turn, or from one drawn at random.

    Without ``probabilities`` the datasets take turns; with them, each example comes
    from a dataset drawn with those probabilities (``seed`` makes it reproducible;
    the draws are the anchor's, numpy's generator, so a seed picks the same rows).
    ``stopping_strategy``: ``"first_exhausted"`` stops as soon as one dataset has
    run out; ``"all_exhausted"`` restarts exhausted datasets until every one has
    been seen in full (oversampling); ``"all_exhausted_without_replacement"`` skips
    exhausted datasets until all have run out, so every example appears once.
    Streamed, ``num_shards`` is the smallest of the datasets'. Map-style inputs give
    a map-style result (the anchor's rules, including that ``"first_exhausted"``
    without probabilities yields whole rounds).

    Args:
        datasets: The datasets, all map-style or all streaming.
        probabilities: Chance of each dataset being drawn for each example.
        seed: Seed of the draws.
        split: The split name of the result.
        stopping_strategy: When to stop (see above).

    Returns:
        A dataset of the same kind as the inputs.

    Raises:
        IncompatibleFeaturesError: A column has different types in two datasets.

    Example:
        >>> a = IterableDataset.from_dict({"x": [0, 1]})
        >>> b = IterableDataset.from_dict({"x": [10, 11, 12]})
        >>> [r["x"] for r in interleave_datasets([a, b], stopping_strategy="all_exhausted")]
        [0, 10, 1, 11, 0, 12]
    """
    if stopping_strategy not in _STRATEGIES:
        raise InvalidArgumentError(
            f"interleave_datasets: unknown stopping_strategy {stopping_strategy!r}; use one "
            f"of {', '.join(_STRATEGIES)}."
        )
    if probabilities is not None and (
        len(probabilities) != len(datasets)
        or any(p < 0 for p in probabilities)
        or not sum(probabilities) > 0
    ):
        raise InvalidArgumentError(
            f"interleave_datasets: probabilities {list(probabilities)!r} must give one "
            f"non-negative number per dataset ({len(datasets)}), not all zero."
        )
    if stopping_strategy == "all_exhausted" and probabilities is not None and 0 in probabilities:
        raise InvalidArgumentError(
            "interleave_datasets(stopping_strategy='all_exhausted'): the datasets at "
            f"{[i for i, p in enumerate(probabilities) if p == 0]} have probability 0, so "
            "they are never exhausted; give them a probability or use 'first_exhausted'."
        )
    kind = _kind(datasets, "interleave")
    if kind is Dataset:
        from dagster_ds.arrow import interleave_map_style

        maps = [d for d in datasets if isinstance(d, Dataset)]
        result = interleave_map_style(maps, probabilities, seed, stopping_strategy)
        result._split = split  # pyright: ignore[reportPrivateUsage]
        return result  # pyright: ignore[reportReturnType]
    streams = [d for d in datasets if isinstance(d, IterableDataset)]
    features = [d._resolve_features() for d in streams]  # pyright: ignore[reportPrivateUsage]
    unified = unify_schemas([f.arrow_schema for f in features], "interleave datasets")
    chosen_seed = seed if seed is not None else random_seed()
    node = InterleaveNode(
        tuple(d._node for d in streams),  # pyright: ignore[reportPrivateUsage]
        unified,
        tuple(probabilities) if probabilities is not None else None,
        chosen_seed,
        stopping_strategy,
    )
    args = {
        "probabilities": list(probabilities) if probabilities is not None else None,
        "seed": chosen_seed if probabilities is not None else None,
        "stopping_strategy": stopping_strategy,
    }
    merged = _merged(features, unified.names)
    return _combined(streams, node, merged, split, "interleave_datasets", args)  # pyright: ignore[reportReturnType]


def _kind(datasets: Sequence[object], what: str) -> type:
    if not datasets:
        raise InvalidArgumentError(f"Cannot {what} an empty list of datasets.")
    kinds: list[type] = []
    for position, dataset in enumerate(datasets):
        if isinstance(dataset, dict):
            raise InvalidArgumentError(
                f"Dataset at position {position} is a dict of splits "
                f"({list(dataset)}); pick one split, e.g. dataset['train']."  # pyright: ignore[reportUnknownArgumentType]
            )
        if not isinstance(dataset, Dataset | IterableDataset):
            raise InvalidArgumentError(
                f"Expected Dataset or IterableDataset objects, but position {position} holds "
                f"a {type(dataset).__name__}."
            )
        kinds.append(Dataset if isinstance(dataset, Dataset) else IterableDataset)
    if len(set(kinds)) > 1:
        other = next(i for i, kind in enumerate(kinds) if kind is not kinds[0])
        raise InvalidArgumentError(
            f"Cannot {what} a {kinds[0].__name__} (position 0) with a {kinds[other].__name__} "
            f"(position {other}); convert them first (Dataset.to_iterable_dataset())."
        )
    return kinds[0]


def _merged(features: Sequence[Features], names: Sequence[str]) -> Features:
    from dagster_ds.arrow import merged_features

    return merged_features(features, pa.schema([(name, pa.null()) for name in names]))


def _combined(
    streams: Sequence[IterableDataset],
    node: VerticalConcat | HorizontalConcat | InterleaveNode,
    features: Features,
    split: str | None,
    transform: str,
    args: dict[str, object],
) -> IterableDataset:
    types = {d._formatter.type for d in streams}  # pyright: ignore[reportPrivateUsage]
    formatter = Formatter(types.pop()) if len(types) == 1 else Formatter()

    def fingerprint() -> str:
        parents = [d.fingerprint for d in streams]
        return update_fingerprint(parents[0], transform, {**args, "fingerprints": parents})

    return IterableDataset(
        node, features=features, formatter=formatter, split=split, fingerprint=fingerprint
    )

"""Column sources on map-style datasets: `record` sets them on the step that made a result.

The sources themselves come from the pure functions of the fingerprint layer
(re-exported here for the transforms of this package).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from dagster_ds.fingerprint import (
    added_column_sources,
    combined_column_sources,
    filter_column_sources,
    flattened_column_sources,
    map_column_sources,
    renamed_column_sources,
    same_column_sources,
)

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset

__all__ = [
    "added_column_sources",
    "combined_column_sources",
    "filter_column_sources",
    "flattened_column_sources",
    "map_column_sources",
    "record",
    "renamed_column_sources",
    "same_column_sources",
]


def record(result: Dataset, parent: Dataset, sources: Mapping[str, Sequence[str]]) -> Dataset:
    """Record ``sources`` on the step that made ``result`` from ``parent``; ``result``.

    Nothing is recorded when ``result`` was not made by a step of its own from
    ``parent`` (an operation that returned its input, say).
    """
    steps = result.lineage
    if (
        result is not parent
        and steps
        and steps[-1].fingerprint == result.fingerprint
        and parent.fingerprint in steps[-1].parents
    ):
        result._record_column_sources(sources)  # pyright: ignore[reportPrivateUsage]
    return result

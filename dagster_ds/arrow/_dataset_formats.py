"""Format methods of `Dataset` beyond `with_format`, and its context manager.

On-the-fly transforms, scoped formats, and ``with ds:`` releasing the memory maps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, cast

from dagster_ds.errors import DatasetReleasedError
from dagster_ds.formatting import Formatter

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset


class FormatMethods:
    """Mixed into `Dataset`: transforms applied when rows are read, scoped formats, ``with``."""

    def with_transform(
        self,
        transform: Callable[[dict[str, list[Any]]], Any] | None,
        columns: Sequence[str] | None = None,
        output_all_columns: bool = False,
    ) -> Dataset:
        """A copy whose rows pass through ``transform`` when read (not stored, not cached).

        ``transform`` gets a batch (a dict of lists; one row is a batch of one) and
        returns a dict of lists, as the anchor's. Only ``columns`` are given to it
        (all by default); ``output_all_columns`` adds the others, untransformed.

        Example:
            >>> ds = Dataset.from_dict({"a": [1, 2]})
            >>> ds.with_transform(lambda b: {"a": [v * 10 for v in b["a"]]})[1]
            {'a': 20}
        """
        dataset = _as_dataset(self)
        return _with_format(dataset, Formatter.custom(transform, columns, output_all_columns))

    def set_transform(
        self,
        transform: Callable[[dict[str, list[Any]]], Any] | None,
        columns: Sequence[str] | None = None,
        output_all_columns: bool = False,
    ) -> None:
        """Apply ``transform`` when rows are read, in place (see `with_transform`).

        Example:
            >>> ds = Dataset.from_dict({"a": [1, 2]})
            >>> ds.set_transform(lambda b: {"b": b["a"]})
            >>> ds[0]
            {'b': 1}
        """
        dataset = _as_dataset(self)
        changed = self.with_transform(transform, columns, output_all_columns)
        dataset._output_format = changed._output_format  # pyright: ignore[reportPrivateUsage]
        dataset._fingerprint = changed._fingerprint  # pyright: ignore[reportPrivateUsage]

    @contextmanager
    def formatted_as(
        self,
        type: str | None = None,
        columns: Sequence[str] | None = None,
        output_all_columns: bool = False,
        **format_kwargs: Any,
    ) -> Iterator[None]:
        """Use another format inside a ``with`` block; the previous one comes back after.

        Example:
            >>> ds = Dataset.from_dict({"a": [1, 2]})
            >>> with ds.formatted_as("numpy"):
            ...     type(ds["a"][:]).__name__
            'ndarray'
            >>> ds.format["type"] is None
            True
        """
        dataset = _as_dataset(self)
        saved = (dataset._output_format, dataset._fingerprint)  # pyright: ignore[reportPrivateUsage]
        dataset.set_format(type, columns, output_all_columns, **format_kwargs)
        try:
            yield
        finally:
            dataset._output_format, dataset._fingerprint = saved  # pyright: ignore[reportPrivateUsage]

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Release the memory-mapped data, as the anchor does; the dataset is unusable after."""
        dataset = _as_dataset(self)
        released = _Released(repr(dataset))
        dataset._rows = (released, None)  # type: ignore[assignment]  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]


class _Released:
    """Stands for the table of a dataset whose ``with`` block has ended."""

    def __init__(self, description: str) -> None:
        self._description = description

    def __getattr__(self, name: str) -> Any:
        raise DatasetReleasedError(
            "This dataset was used after the end of its `with` block, which released its "
            f"data ({self._description.splitlines()[0]}...). Use it inside the block, or "
            "leave out the `with`."
        )


def _with_format(dataset: Dataset, output_format: Formatter) -> Dataset:
    from dagster_ds.arrow._column_lineage import same_column_sources
    from dagster_ds.fingerprint import LineageStep, update_fingerprint

    if output_format.columns is not None:
        dataset._require_columns(output_format.columns, "with_transform(columns=...)")  # pyright: ignore[reportPrivateUsage]
    fingerprint = update_fingerprint(dataset.fingerprint, "set_format", output_format.as_dict())
    step = LineageStep("set_format", fingerprint, (dataset.fingerprint,)).with_columns(
        same_column_sources(dataset.column_names)
    )
    result = dataset._from_shards(  # pyright: ignore[reportPrivateUsage]
        dataset,
        dataset._shards,  # pyright: ignore[reportPrivateUsage]
        fingerprint=fingerprint,
        mapping=dataset._mapping,  # pyright: ignore[reportPrivateUsage]
        mapping_entries=dataset._mapping_entries,  # pyright: ignore[reportPrivateUsage]
        step=step,
    )
    result._output_format = output_format  # pyright: ignore[reportPrivateUsage]
    return result


def _as_dataset(mixin: object) -> Dataset:
    return cast("Dataset", mixin)

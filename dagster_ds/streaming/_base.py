"""What every IterableDataset holds, and how a transform derives a new one."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dagster_ds.features import Features
from dagster_ds.fingerprint import LineageStep, same_column_sources, update_fingerprint
from dagster_ds.formatting import Formatter
from dagster_ds.streaming._iteration import EpochCell
from dagster_ds.streaming._node import Node

if TYPE_CHECKING:
    from dagster_ds.streaming._dataset import IterableDataset
    from dagster_ds.streaming._iteration import Progress


class _Keep:
    """Marker: keep the parent's features."""


KEEP = _Keep()


#: A transform's column sources, computed when the lineage is asked for (None: unknown).
ColumnSources = Callable[[], Mapping[str, Sequence[str]] | None]


class StreamBase:
    """The parts of an `IterableDataset`: a node tree, features, format, fingerprint, epoch."""

    _node: Node
    _declared: Features | None
    _formatter: Formatter
    _split: str | None
    _fingerprint_of: Callable[[], str]
    _fingerprint_value: str | None
    _epoch_cell: EpochCell
    _starting_state: dict[str, Any] | None
    _live: Progress | None
    _made_by: tuple[StreamBase, str, ColumnSources | None] | None

    def _setup(
        self,
        node: Node,
        *,
        features: Features | None,
        formatter: Formatter,
        split: str | None,
        fingerprint: Callable[[], str],
    ) -> None:
        self._node = node
        self._declared = features
        self._formatter = formatter
        self._split = split
        self._fingerprint_of = fingerprint
        self._fingerprint_value = None
        self._epoch_cell = EpochCell()
        self._starting_state = None
        self._live = None
        self._made_by = None

    @property
    def _epoch(self) -> int:
        return self._epoch_cell.get()

    @_epoch.setter
    def _epoch(self, epoch: int) -> None:
        self._epoch_cell.set(epoch)

    @property
    def _fingerprint(self) -> str:
        """The 32-hex-character fingerprint, computed on first use (sources can be large)."""
        if self._fingerprint_value is None:
            self._fingerprint_value = self._fingerprint_of()
        return self._fingerprint_value

    @property
    def fingerprint(self) -> str:
        """The fingerprint of what this dataset yields: its sources and every operator since.

        Computed on first access: for local files that means hashing their content
        once per process (remote files count by their storage checksum).

        Example:
            >>> a = IterableDataset.from_dict({"x": [1, 2]})
            >>> a.take(1).fingerprint != a.fingerprint
            True
        """
        return self._fingerprint

    def _new(
        self,
        node: Node,
        *,
        features: Features | None,
        formatter: Formatter,
        split: str | None,
        fingerprint: Callable[[], str],
    ) -> IterableDataset:
        """A dataset of these parts, of this dataset's own class (`IterableDataset`)."""
        make: Any = type(self)  # the class the operator mixins are assembled into
        return make(
            node, features=features, formatter=formatter, split=split, fingerprint=fingerprint
        )

    def _derive(
        self,
        node: Node,
        transform: str,
        args: Mapping[str, Any],
        *,
        features: Features | _Keep | None = KEEP,
        formatter: Formatter | None = None,
        columns: ColumnSources | None = None,
    ) -> IterableDataset:
        """A new dataset: ``node`` made by ``transform(**args)`` from this one.

        ``columns`` gives the parent columns each output column came from, when
        the lineage is asked for (so no file is read to know the columns now);
        by default every column from itself (a transform of rows).
        """
        parent = self

        def fingerprint() -> str:
            return update_fingerprint(parent._fingerprint, transform, args)

        declared = self._declared if isinstance(features, _Keep) else features
        derived = self._new(
            node,
            features=declared,
            formatter=formatter if formatter is not None else self._formatter,
            split=self._split,
            fingerprint=fingerprint,
        )
        derived._made_by = (self, transform, columns)
        return derived

    @property
    def lineage(self) -> tuple[LineageStep, ...]:
        """The transforms that made this stream from its source, oldest first.

        Each step names the transform, the fingerprint it produced and its parent's
        (`push_to_hub` records them in the dataset card).

        Example:
            >>> ds = IterableDataset.from_dict({"a": [1, 2]}).filter(lambda x: x["a"] > 1)
            >>> [step.transform for step in ds.take(1).lineage]
            ['filter', 'take']
        """
        steps: list[LineageStep] = []
        current: StreamBase = self
        while current._made_by is not None:
            parent, transform, columns = current._made_by
            step = LineageStep(transform, current._fingerprint, (parent._fingerprint,))
            sources = columns() if columns is not None else parent._same_columns()
            steps.append(step.with_columns(sources) if sources is not None else step)
            current = parent
        return tuple(reversed(steps))

    def _same_columns(self) -> dict[str, tuple[str, ...]] | None:
        """Each of this stream's columns from itself (None: the columns are unknown)."""
        names = self.column_names
        return same_column_sources(names) if names is not None else None

    @property
    def features(self) -> Features | None:
        """The column types, or None when unknown without running a function (after `map`).

        Parquet sources give them from the file footer; other files from the first
        batch of the first file (read once, when first asked).

        Example:
            >>> IterableDataset.from_dict({"a": [1]}).features
            {'a': Value('int64')}
        """
        if self._declared is not None:
            return self._declared.copy()
        schema = self._node.schema
        return Features.from_arrow_schema(schema) if schema is not None else None

    @property
    def column_names(self) -> list[str] | None:
        """The column names, or None when the features are unknown.

        Example:
            >>> IterableDataset.from_dict({"a": [1], "b": [2]}).column_names
            ['a', 'b']
        """
        features = self.features
        return list(features) if features is not None else None

    @property
    def num_columns(self) -> int | None:
        """How many columns, or None when the features are unknown.

        Example:
            >>> IterableDataset.from_dict({"a": [1], "b": [2]}).num_columns
            2
        """
        names = self.column_names
        return len(names) if names is not None else None

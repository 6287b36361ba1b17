"""Column lineage composed: each output column followed back through a dataset's steps.

Each `LineageStep` may record which parent columns each of its output columns
came from. Following those records back from a dataset to its roots (datasets
with no earlier step, or fingerprints the caller names, such as a Dagster
asset's inputs) gives, for each output column, the root columns its values
depend on and the transforms that made it. A step that recorded nothing counts
as "every output column depends on every parent column": never less than the
truth.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from dagster_ds.fingerprint._lineage import LineageStep

#: The column name that stands for "every column" of a root whose columns are unknown.
EVERY_COLUMN = "*"
#: How a dataset asset's lineage step names its transform: ``dataset_asset:<asset>``.
ASSET_STEP = "dataset_asset:"

_Found = tuple[frozenset[tuple[str, str]], frozenset[tuple[int, str]]]


@dataclass(frozen=True)
class ColumnOrigin:
    """Where one output column came from.

    Attributes:
        column: The output column.
        sources: The (root fingerprint, root column) pairs its values depend on,
            sorted; the column is `EVERY_COLUMN` for a root whose columns are unknown.
        transforms: The transforms that made it, oldest first: every step on its
            way that did more than pass a column through unchanged under its name.

    Example:
        >>> origin = ColumnOrigin("n", (("a" * 32, "text"),), ("map",))
        >>> origin.sources[0][1]
        'text'
    """

    column: str
    sources: tuple[tuple[str, str], ...]
    transforms: tuple[str, ...]


def column_origins(
    lineage: Sequence[LineageStep],
    columns: Sequence[str],
    *,
    fingerprint: str | None = None,
    roots: Collection[str] = (),
    root_columns: Mapping[str, Sequence[str]] | None = None,
) -> tuple[ColumnOrigin, ...]:
    """Each of ``columns`` followed back through ``lineage`` to its roots.

    Args:
        lineage: The steps that made the dataset, oldest first (``dataset.lineage``).
        columns: The dataset's columns.
        fingerprint: The dataset's fingerprint (default: the last step's).
        roots: Fingerprints to stop at even when ``lineage`` has their steps.
        root_columns: The columns of roots, where known: a step that recorded no
            columns depends on all of them (else on `EVERY_COLUMN`).

    Returns:
        One `ColumnOrigin` per column, in the order given.

    Example:
        >>> source, renamed = "a" * 32, "b" * 32
        >>> steps = [LineageStep("rename_columns", renamed, (source,), (("y", ("x",)),))]
        >>> column_origins(steps, ["y"])[0].sources == ((source, "x"),)
        True
    """
    tracer = _Tracer(lineage, frozenset(roots), root_columns or {})
    start = fingerprint if fingerprint is not None else (lineage[-1].fingerprint if lineage else "")
    found: list[ColumnOrigin] = []
    for column in columns:
        pairs, made = tracer.column(start, column, len(lineage))
        found.append(
            ColumnOrigin(column, tuple(sorted(pairs)), tuple(name for _, name in sorted(made)))
        )
    return tuple(found)


class _Tracer:
    """Follows columns back through steps, remembering what it already followed."""

    def __init__(
        self,
        lineage: Sequence[LineageStep],
        roots: frozenset[str],
        root_columns: Mapping[str, Sequence[str]],
    ) -> None:
        self.lineage = lineage
        self.roots = roots
        self.root_columns = root_columns
        self.memo: dict[tuple[str, str | None, int], _Found] = {}

    def step(self, fingerprint: str, before: int) -> int | None:
        """The position of the last step before ``before`` that made ``fingerprint``."""
        if fingerprint in self.roots:
            return None
        for index in range(before - 1, -1, -1):
            if self.lineage[index].fingerprint == fingerprint:
                return index if self.lineage[index].parents else None
        return None

    def column(self, fingerprint: str, column: str, before: int) -> _Found:
        """The root columns and transforms behind ``column`` of dataset ``fingerprint``."""
        key = (fingerprint, column, before)
        if key not in self.memo:
            self.memo[key] = self._column(fingerprint, column, before)
        return self.memo[key]

    def _column(self, fingerprint: str, column: str, before: int) -> _Found:
        index = self.step(fingerprint, before)
        if index is None:
            return frozenset({(fingerprint, column)}), frozenset()
        step = self.lineage[index]
        pairs = step.parent_columns(column)
        if pairs is None:  # not recorded: every parent column
            found = [self.every_column(parent, index) for parent in step.parents]
            return _union(found, (index, step.transform))
        found = [self.column(parent, name, index) for parent, name in pairs]
        passed = pairs == ((step.parents[0], column),) and len(step.parents) == 1
        return _union(found, None if passed else (index, step.transform))

    def every_column(self, fingerprint: str, before: int) -> _Found:
        """The root columns and transforms behind every column of dataset ``fingerprint``."""
        key = (fingerprint, None, before)
        if key in self.memo:
            return self.memo[key]
        index = self.step(fingerprint, before)
        if index is None:
            names = self.root_columns.get(fingerprint, (EVERY_COLUMN,))
            found: _Found = frozenset((fingerprint, name) for name in names), frozenset()
        else:
            step = self.lineage[index]
            sources = step.column_sources()
            if sources is None:
                parts = [self.every_column(parent, index) for parent in step.parents]
                found = _union(parts, (index, step.transform))
            else:
                found = _union([self.column(fingerprint, name, before) for name in sources], None)
        self.memo[key] = found
        return found


def _union(parts: Sequence[_Found], made: tuple[int, str] | None) -> _Found:
    pairs = frozenset(pair for found, _ in parts for pair in found)
    steps = frozenset(step for _, done in parts for step in done)
    return pairs, steps | {made} if made is not None else steps


def lineage_origins(steps: Sequence[LineageStep]) -> tuple[ColumnOrigin, ...] | None:
    """The origins of the columns of the dataset ``steps`` made (None: not recorded).

    When the last step is a dataset asset's (``dataset_asset:<asset>``, parents
    the upstream assets' fingerprints), each column's sources are the upstream
    columns recorded on it and its transforms those of the asset's function;
    otherwise the columns are followed back to the roots of ``steps``.

    Example:
        >>> source, asset = "a" * 32, "b" * 32
        >>> step = LineageStep("dataset_asset:n", asset, (source,), (("y", ("x",)),))
        >>> lineage_origins([step])[0].sources == ((source, "x"),)
        True
    """
    if not steps or steps[-1].columns is None:
        return None
    last = steps[-1]
    columns = [name for name, _ in last.columns or ()]
    if not last.transform.startswith(ASSET_STEP):
        return column_origins(steps, columns)
    inner = column_origins(
        steps[:-1],
        columns,
        fingerprint=steps[-2].fingerprint if len(steps) > 1 else last.fingerprint,
        roots=last.parents,
    )
    return tuple(
        ColumnOrigin(
            origin.column,
            tuple(sorted(set(last.parent_columns(origin.column) or ()))),
            origin.transforms,
        )
        for origin in inner
    )


def asset_names(steps: Sequence[LineageStep]) -> dict[str, str]:
    """The dataset assets among ``steps``: the asset name by the fingerprint of its dataset.

    Example:
        >>> asset_names([LineageStep("dataset_asset:labelled", "a" * 32, ())])
        {'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa': 'labelled'}
    """
    return {
        step.fingerprint: step.transform.removeprefix(ASSET_STEP)
        for step in steps
        if step.transform.startswith(ASSET_STEP)
    }

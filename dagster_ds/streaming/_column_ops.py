"""The column operators of IterableDataset: rename, remove, select, cast, and formats."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dagster_ds.errors import InvalidArgumentError
from dagster_ds.features import Features, cast_table
from dagster_ds.fingerprint import renamed_column_sources, same_column_sources
from dagster_ds.formatting import Formatter
from dagster_ds.streaming._base import StreamBase
from dagster_ds.streaming._columns import (
    CastColumns,
    RemoveColumns,
    RenameColumns,
    SelectColumns,
    check_columns,
    check_renames,
)

if TYPE_CHECKING:
    from dagster_ds.streaming._dataset import IterableDataset


def _names(columns: str | Sequence[str]) -> tuple[str, ...]:
    return (columns,) if isinstance(columns, str) else tuple(columns)


class ColumnOperators(StreamBase):
    """Operators that change the columns (never the rows), and the output format."""

    def rename_column(self, original_column_name: str, new_column_name: str) -> IterableDataset:
        """The dataset with one column renamed.

        Example:
            >>> ds = IterableDataset.from_dict({"a": [1]}).rename_column("a", "b")
            >>> list(ds)
            [{'b': 1}]
        """
        return self.rename_columns({original_column_name: new_column_name})

    def rename_columns(self, column_mapping: Mapping[str, str]) -> IterableDataset:
        """The dataset with columns renamed by ``{old: new}``.

        Example:
            >>> ds = IterableDataset.from_dict({"a": [1], "b": [2]})
            >>> ds.rename_columns({"a": "x"}).column_names
            ['x', 'b']
        """
        mapping = tuple((str(old), str(new)) for old, new in column_mapping.items())
        features = self.features
        if features is not None:
            check_renames(mapping, list(features))
            renamed = dict(mapping)
            features = Features({renamed.get(k, k): v for k, v in features.items()})
        node = RenameColumns(self._node, mapping=mapping)
        parent = self.column_names

        def sources() -> dict[str, tuple[str, ...]] | None:
            return renamed_column_sources(parent, dict(mapping)) if parent is not None else None

        args = {"mapping": dict(mapping)}
        return self._derive(node, "rename_columns", args, features=features, columns=sources)

    def remove_columns(self, column_names: str | Sequence[str]) -> IterableDataset:
        """The dataset without some columns.

        Example:
            >>> IterableDataset.from_dict({"a": [1], "b": [2]}).remove_columns("a").column_names
            ['b']
        """
        names = _names(column_names)
        features = self.features
        if features is not None:
            check_columns(names, list(features), "remove_columns")
            features = Features({k: v for k, v in features.items() if k not in names})
        node = RemoveColumns(self._node, names=names)
        kept = list(features) if features is not None else None

        def sources() -> dict[str, tuple[str, ...]] | None:
            return same_column_sources(kept) if kept is not None else None

        return self._derive(
            node, "remove_columns", {"names": names}, features=features, columns=sources
        )

    def select_columns(self, column_names: str | Sequence[str]) -> IterableDataset:
        """The dataset with only some columns, in the given order.

        Example:
            >>> IterableDataset.from_dict({"a": [1], "b": [2]}).select_columns(["b"]).column_names
            ['b']
        """
        names = _names(column_names)
        features = self.features
        if features is not None:
            check_columns(names, list(features), "select_columns")
            features = Features({name: features[name] for name in names})
        node = SelectColumns(self._node, names=names)
        return self._derive(
            node,
            "select_columns",
            {"names": names},
            features=features,
            columns=lambda: same_column_sources(names),
        )

    def cast(self, features: Features) -> IterableDataset:
        """The dataset cast to ``features``; casts that would lose information are refused.

        Example:
            >>> from dagster_ds.features import Value
            >>> ds = IterableDataset.from_dict({"a": [1, 0]}).cast(Features({"a": Value("bool")}))
            >>> [x["a"] for x in ds]
            [True, False]
        """
        features = Features(features)
        known = self.features
        if known is not None:  # the column names must match: say so now, not mid-stream
            cast_table(known.arrow_schema.empty_table(), features)
        node = CastColumns(self._node, features=features)
        return self._derive(
            node,
            "cast",
            {"features": features.to_dict()},
            features=features,
            columns=lambda: same_column_sources(list(features)),
        )

    def cast_column(self, column: str, feature: Any) -> IterableDataset:
        """The dataset with one column cast to ``feature``.

        Example:
            >>> from dagster_ds.features import Value
            >>> ds = IterableDataset.from_dict({"a": [1]}).cast_column("a", Value("string"))
            >>> list(ds)
            [{'a': '1'}]
        """
        features = self.features
        if features is None:
            raise InvalidArgumentError(
                f"cast_column({column!r}): the features are unknown here (after map); pass "
                "features= to map, or use cast(features) with every column."
            )
        check_columns([column], list(features), "cast_column")
        features[column] = feature
        return self.cast(features)

    def with_format(self, type: str | None = None) -> IterableDataset:
        """A copy whose examples and batches come as ``type`` instead of Python objects.

        ``type`` is None (Python objects), ``"numpy"``, ``"arrow"`` (Arrow tables),
        ``"pandas"`` or ``"torch"`` (torch must be installed). Functions given to
        `map` and `filter` afterwards receive this format too, so an Arrow-vectorised
        map is ``ds.with_format("arrow").map(f, batched=True)``.

        Example:
            >>> ds = IterableDataset.from_dict({"a": [1, 2]}).with_format("arrow")
            >>> next(ds.iter(batch_size=2)).num_rows
            2
        """
        formatter = Formatter.create(type)
        args = {"type": formatter.type}
        return self._derive(self._node, "with_format", args, formatter=formatter)

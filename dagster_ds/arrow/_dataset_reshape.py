"""Reshaping methods of `Dataset`: batch, flatten, repeat, add_item, class_encode_column.

Each is built on the cached primitives (`map`, `select`, `cast_column`,
`concatenate_datasets`), so it is fingerprinted and cached as they are.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from dagster_ds.arrow._column_lineage import flattened_column_sources, record, same_column_sources
from dagster_ds.arrow._entries import TableSink
from dagster_ds.errors import AnchorDifferenceWarning, InvalidArgumentError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from dagster_ds.arrow._dataset import Dataset


class ReshapeMethods:
    """Mixed into `Dataset`: batch, flatten, repeat, add_item, class_encode_column."""

    def batch(
        self,
        batch_size: int | None = None,
        by_column: str | Sequence[str] | None = None,
        drop_last_batch: bool = False,
        num_proc: int | None = None,
        new_fingerprint: str | None = None,
    ) -> Dataset:
        """One row per ``batch_size`` rows: every column becomes a list of that many values.

        With ``by_column``, each run of consecutive rows with equal values in that
        column (or columns) becomes one row, whatever its length; ``batch_size`` then
        only says how the anchor reads the rows, which matters for
        ``drop_last_batch``: when ``batch_size`` does not divide the number of rows,
        the last ``len % batch_size`` rows and the run still open before them are
        dropped, as the anchor. A run of nulls is a run of its own (the anchor merges
        it with its neighbours): an `AnchorDifferenceWarning` says so.

        Example:
            >>> Dataset.from_dict({"a": [1, 2, 3]}).batch(2)["a"][:]
            [[1, 2], [3]]
            >>> Dataset.from_dict({"k": [1, 1, 2]}).batch(by_column="k")["k"][:]
            [[1, 1], [2]]
        """
        from dagster_ds.features import Features, List

        dataset = _as_dataset(self)
        if batch_size is None and by_column is None:
            raise InvalidArgumentError(
                "batch(): give batch_size (rows per batch) or by_column (the column(s) whose "
                "runs of equal values make one batch)."
            )
        if batch_size is not None and batch_size < 1 and by_column is None:
            raise InvalidArgumentError(
                f"batch(batch_size={batch_size!r}): give a positive number of rows per batch."
            )
        features = Features({name: List(feature) for name, feature in dataset.features.items()})
        if by_column is not None:
            columns = [by_column] if isinstance(by_column, str) else list(by_column)
            runs = _batch_runs(dataset, columns, batch_size, drop_last_batch, new_fingerprint)
            return _same_format(runs, dataset)
        arrow = dataset.with_format("arrow")
        grouped = arrow.map(
            _grouped,
            batched=True,
            batch_size=batch_size,
            drop_last_batch=drop_last_batch,
            remove_columns=dataset.column_names,
            features=features,
            num_proc=num_proc,
            new_fingerprint=new_fingerprint,
            desc="Batching",
        )
        sources = same_column_sources(dataset.column_names)
        return _same_format(record(grouped, arrow, sources), dataset)

    def flatten(self, new_fingerprint: str | None = None, max_depth: int = 16) -> Dataset:
        """Struct columns become one column per field, named ``column.field`` (as the anchor).

        Example:
            >>> Dataset.from_dict({"a": [{"b": 1, "c": "x"}]}).flatten().column_names
            ['a.b', 'a.c']
        """
        dataset = _as_dataset(self)
        features = dataset.features.flatten(max_depth=max_depth)
        if list(features) == dataset.column_names:
            return dataset
        arrow = dataset.with_format("arrow")
        flat = arrow.map(
            _flattened,
            batched=True,
            remove_columns=dataset.column_names,
            features=features,
            fn_kwargs={"max_depth": max_depth, "names": list(features)},
            new_fingerprint=new_fingerprint,
            desc="Flattening the dataset",
        )
        sources = flattened_column_sources(dataset.column_names, flat.column_names)
        return _same_format(record(flat, arrow, sources), dataset)

    def repeat(self, num_times: int | None) -> Dataset:
        """The rows ``num_times`` times over (an indices mapping: no data is copied).

        ``None`` (repeat forever) is for `IterableDataset.repeat`; here it raises a
        ``ValueError``, as the anchor.

        Example:
            >>> Dataset.from_dict({"a": [1, 2]}).repeat(2)["a"][:]
            [1, 2, 1, 2]
        """
        dataset = _as_dataset(self)
        if num_times is None:
            raise InvalidArgumentError(
                "repeat(None): Map style datasets do not support indefinite repetition. "
                "Give a number of repetitions, or repeat a stream: "
                "dataset.to_iterable_dataset().repeat(None)."
            )
        if num_times < 0:
            raise InvalidArgumentError(
                f"repeat(num_times={num_times!r}): give 0 or more repetitions."
            )
        return dataset.select(list(range(len(dataset))) * num_times)

    def add_item(self, item: Mapping[str, Any], new_fingerprint: str | None = None) -> Dataset:
        """The dataset with one more row at the end.

        As the anchor: the item's values are cast to the dataset's features; a key the
        dataset lacks adds a column (null in the other rows), a missing key is null,
        and a value in an all-null column gives the column the value's type.

        Example:
            >>> Dataset.from_dict({"a": [1]}).add_item({"a": 2, "b": "x"}).to_dict()
            {'a': [1, 2], 'b': [None, 'x']}
        """
        from dagster_ds.arrow._combine import concatenate_map_style
        from dagster_ds.features import Features

        dataset = _as_dataset(self)
        row = type(dataset).from_list([dict(item)])
        known = dataset.features
        widened = {
            name: feature
            for name, feature in row.features.items()
            if name in known and _all_null(known[name]) and not _all_null(feature)
        }
        kept = {name: known[name] for name in row.features if name in known and name not in widened}
        row_features = Features({**row.features, **kept})
        if row_features != row.features:
            row = row.cast(row_features)
        wider = dataset.cast(Features({**known, **widened})) if widened else dataset
        result = concatenate_map_style([wider, row], axis=0)
        if new_fingerprint is not None:
            result._fingerprint = new_fingerprint  # pyright: ignore[reportPrivateUsage]
        return _same_format(result, dataset)

    def class_encode_column(self, column: str, include_nulls: bool = False) -> Dataset:
        """The column's values become a `ClassLabel` whose names are its sorted distinct values.

        Values that are not strings are turned into strings first, as the anchor does.
        Nulls stay null (no label), or become the class ``"None"`` with ``include_nulls``.

        Example:
            >>> ds = Dataset.from_dict({"c": ["b", "a", "b"]}).class_encode_column("c")
            >>> ds.features["c"].names, ds["c"][:]
            (['a', 'b'], [1, 0, 1])
        """
        import pyarrow.compute as pc

        from dagster_ds.features import ClassLabel, Features, Value

        dataset = _as_dataset(self)
        dataset._require_columns([column], "class_encode_column")  # pyright: ignore[reportPrivateUsage]
        feature = dataset.features[column]
        if isinstance(feature, ClassLabel):
            return dataset
        if not isinstance(feature, Value):
            raise InvalidArgumentError(
                f"class_encode_column({column!r}): the column is {feature}, not a Value; only "
                "columns of plain values (strings, numbers, booleans) can be class-encoded."
            )
        if feature.dtype == "bool":  # Python's str(): "False", "True" (as the anchor)
            arrow = dataset.with_format("arrow")
            texts = arrow.map(
                _bools_as_text,
                batched=True,
                fn_kwargs={"column": column},
                features=Features({**dataset.features, column: Value("string")}),
                desc="Encoding booleans",
            )
            record(texts, arrow, same_column_sources(dataset.column_names))
        elif feature.dtype == "string":
            texts = dataset
        else:
            texts = dataset.cast_column(column, Value("string"))
        if include_nulls:
            texts = texts.map(
                _nulls_as_text,
                input_columns=[column],
                fn_kwargs={"column": column},
                batched=True,
                desc="Encoding nulls",
            )
        values: pa.ChunkedArray = texts.with_format("arrow")[column]
        names = sorted(value for value in pc.unique(values).to_pylist() if value is not None)
        encoded = texts.cast_column(column, ClassLabel(names=names))
        return _same_format(encoded, dataset)


def _batch_runs(
    dataset: Dataset,
    columns: list[str],
    batch_size: int | None,
    drop_last_batch: bool,
    new_fingerprint: str | None,
) -> Dataset:
    """``batch(by_column=columns)``: computed over the whole dataset, so runs cross shards."""
    from dagster_ds.arrow._results import plan, table_result
    from dagster_ds.features import Features, List, table_to_batch

    dataset._require_columns(columns, "batch(by_column=...)")  # pyright: ignore[reportPrivateUsage]
    args = {"batch_size": batch_size, "by_column": columns, "drop_last_batch": drop_last_batch}
    transform = plan(dataset, "batch", args, new_fingerprint)
    features = Features({name: List(feature) for name, feature in dataset.features.items()})
    if any(dataset.with_format("arrow")[name].null_count for name in columns):
        warnings.warn(
            f"batch(by_column={columns!r}): the column holds nulls; a run of nulls becomes "
            "a batch of its own (datasets merges nulls into the neighbouring runs).",
            AnchorDifferenceWarning,
            stacklevel=3,
        )

    def write(sink: TableSink) -> None:
        from dagster_ds.streaming import group_runs, rows_differ  # the streaming engine

        table = dataset._read(slice(None))  # pyright: ignore[reportPrivateUsage]
        cut = table.num_rows
        if drop_last_batch and batch_size and batch_size > 0 and table.num_rows % batch_size:
            cut = table.num_rows - table.num_rows % batch_size
        rows = table_to_batch(table.slice(0, cut))
        starts = [0] if rows.num_rows else []
        if rows.num_rows > 1:
            changed = rows_differ(rows.slice(0, rows.num_rows - 1), rows.slice(1), tuple(columns))
            starts += [index + 1 for index, flag in enumerate(changed) if flag]
        if cut < table.num_rows and starts:  # the anchor never closes the last run then
            rows = rows.slice(0, starts.pop())
        if starts:
            sink.write(group_runs(rows, starts))
        else:
            sink.write(features.arrow_schema.empty_table())

    return table_result(dataset, transform, write, lambda _schema: features)


def _all_null(feature: Any) -> bool:
    """Whether ``feature`` holds only nulls (``Value("null")``, or lists of it)."""
    from dagster_ds.features import Value

    while not isinstance(feature, Value) and hasattr(feature, "feature"):
        feature = feature.feature
    return isinstance(feature, Value) and feature.dtype == "null"


def _grouped(table: pa.Table) -> pa.Table:
    offsets = pa.array([0, table.num_rows], pa.int32())
    arrays = [
        pa.ListArray.from_arrays(offsets, column.combine_chunks()) for column in table.columns
    ]
    return pa.Table.from_arrays(arrays, names=table.column_names)


def _flattened(table: pa.Table, max_depth: int, names: list[str]) -> pa.Table:
    """Struct columns split until the columns are ``names`` (images stay whole)."""
    for _ in range(max_depth):
        split = [
            field.name
            for field in table.schema
            if pa.types.is_struct(field.type) and field.name not in names
        ]
        if not split:
            break
        columns: dict[str, Any] = {}
        for name, column in zip(table.column_names, table.columns, strict=True):
            if name in split:
                for sub_field, sub in zip(column.type, column.flatten(), strict=True):
                    columns[f"{name}.{sub_field.name}"] = sub
            else:
                columns[name] = column
        table = pa.table(columns)
    return table


def _bools_as_text(table: pa.Table, column: str) -> pa.Table:
    import pyarrow.compute as pc

    values = pc.if_else(table.column(column), "True", "False")
    return table.set_column(table.column_names.index(column), column, values)


def _nulls_as_text(values: list[str | None], column: str) -> dict[str, list[str]]:
    return {column: ["None" if value is None else value for value in values]}


def _same_format(result: Dataset, source: Dataset) -> Dataset:
    result._output_format = source._output_format.restricted_to(result.column_names)  # pyright: ignore[reportPrivateUsage]
    return result


def _as_dataset(mixin: object) -> Dataset:
    return cast("Dataset", mixin)


class LabelMethods:
    """Mixed into `Dataset`: distinct values and label mappings."""

    def unique(self, column: str) -> list[Any]:
        """The column's distinct values, in order of first appearance.

        Example:
            >>> Dataset.from_dict({"a": [2, 1, 2]}).unique("a")
            [2, 1]
        """
        import pyarrow.compute as pc

        dataset = _as_dataset(self)
        dataset._require_columns([column], "unique")  # pyright: ignore[reportPrivateUsage]
        values: pa.ChunkedArray = dataset.with_format("arrow")[column]
        return pc.unique(values).to_pylist()

    def align_labels_with_mapping(self, label2id: Mapping[str, int], label_column: str) -> Dataset:
        """Renumber a `ClassLabel` column (or a list of them) to the ids of ``label2id``.

        Names are matched case-insensitively, as the anchor does; the new names are
        ``label2id``'s keys in id order.

        Example:
            >>> from dagster_ds import ClassLabel, Features
            >>> labels = Features({"l": ClassLabel(names=["a", "b"])})
            >>> ds = Dataset.from_dict({"l": [0, 1]}, features=labels)
            >>> aligned = ds.align_labels_with_mapping({"B": 0, "A": 1}, "l")
            >>> aligned["l"][:], aligned.features["l"].names
            ([1, 0], ['B', 'A'])
        """
        from dagster_ds.features import ClassLabel, Features, List

        dataset = _as_dataset(self)
        dataset._require_columns([label_column], "align_labels_with_mapping")  # pyright: ignore[reportPrivateUsage]
        feature = dataset.features[label_column]
        inner = feature.feature if isinstance(feature, List) else feature
        if not isinstance(inner, ClassLabel):
            raise InvalidArgumentError(
                f"align_labels_with_mapping: column {label_column!r} is {feature}; only a "
                "ClassLabel column, or a list of ClassLabel, can be aligned."
            )
        ordered = sorted(label2id.items(), key=lambda item: item[1])
        lowered = {name.lower(): index for name, index in label2id.items()}
        missing = [name for name in inner.names if name.lower() not in lowered]
        if missing:
            raise InvalidArgumentError(
                f"align_labels_with_mapping: the labels {missing} of column {label_column!r} "
                f"are not in label2id ({sorted(label2id)}); give an id for every label."
            )
        lookup = pa.array([lowered[name.lower()] for name in inner.names], pa.int64())
        label = ClassLabel(names=[name for name, _ in ordered])
        features = Features(dataset.features)
        features[label_column] = List(label) if isinstance(feature, List) else label
        aligned = dataset.with_format("arrow").map(
            _renumbered,
            batched=True,
            fn_kwargs={"column": label_column, "lookup": lookup},
            features=features,
            desc="Aligning the labels",
        )
        return _same_format(aligned, dataset)


def _renumbered(table: pa.Table, column: str, lookup: pa.Array) -> pa.Table:
    import pyarrow.compute as pc

    values: Any = table.column(column).combine_chunks()
    if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        flat = pc.take(lookup, values.values)
        renumbered: Any = type(values).from_arrays(values.offsets, flat, mask=values.is_null())
    else:
        renumbered = pc.take(lookup, values)
    return table.set_column(table.column_names.index(column), column, renumbered)

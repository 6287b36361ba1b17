"""Column operators: rename, select, remove and cast, one batch at a time (zero-copy but cast)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from dagster_ds.errors import ColumnNotFoundError, DuplicateColumnError
from dagster_ds.features import Features, cast_table
from dagster_ds.streaming._arrow import drop_schema, rename_schema, select_schema
from dagster_ds.streaming._node import BatchwiseNode


def check_columns(names: Sequence[str], available: Sequence[str], operation: str) -> None:
    """Raise `ColumnNotFoundError` naming the columns of ``names`` not in ``available``."""
    missing = [name for name in names if name not in available]
    if missing:
        raise ColumnNotFoundError(
            f"{operation}: column(s) {missing} not in the dataset, whose columns are "
            f"{list(available)}. Check the spelling, or add the column first."
        )


def check_renames(mapping: Sequence[tuple[str, str]], available: Sequence[str]) -> None:
    """Raise for a rename of a missing column, or onto a name already taken."""
    check_columns([old for old, _ in mapping], available, "rename_columns")
    after = [name for name in available if name not in dict(mapping)] + [new for _, new in mapping]
    clashes = sorted({name for name in after if after.count(name) > 1})
    if clashes:
        raise DuplicateColumnError(
            f"rename_columns {dict(mapping)}: column(s) {clashes} would appear twice; the "
            f"dataset's columns are {list(available)}. Pick new names not already in use."
        )


@dataclass(frozen=True, eq=False)
class RenameColumns(BatchwiseNode):
    """Columns renamed by ``{old: new}``."""

    mapping: tuple[tuple[str, str], ...]

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        check_renames(self.mapping, batch.schema.names)
        mapping = dict(self.mapping)
        return batch.rename_columns([mapping.get(name, name) for name in batch.schema.names])

    @property
    def schema(self) -> pa.Schema | None:
        schema = self.child.schema
        return rename_schema(schema, dict(self.mapping)) if schema is not None else None


@dataclass(frozen=True, eq=False)
class SelectColumns(BatchwiseNode):
    """Only some columns, in the given order."""

    names: tuple[str, ...]

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        check_columns(self.names, batch.schema.names, "select_columns")
        return batch.select(list(self.names))

    @property
    def schema(self) -> pa.Schema | None:
        schema = self.child.schema
        return select_schema(schema, self.names) if schema is not None else None


@dataclass(frozen=True, eq=False)
class RemoveColumns(BatchwiseNode):
    """All columns but some."""

    names: tuple[str, ...]

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        check_columns(self.names, batch.schema.names, "remove_columns")
        return batch.drop_columns(list(self.names))

    @property
    def schema(self) -> pa.Schema | None:
        schema = self.child.schema
        return drop_schema(schema, self.names) if schema is not None else None


@dataclass(frozen=True, eq=False)
class CastColumns(BatchwiseNode):
    """Every column cast to ``features`` (`cast_table`: no silent loss)."""

    features: Features

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return cast_table(batch, self.features)

    @property
    def schema(self) -> pa.Schema | None:
        return self.features.arrow_schema

"""Property-based round trips: what our writers write, our readers read back unchanged."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagster_ds.formats import iter_batches, write_batches

from ._helpers import read_all

SCHEMA = pa.schema({"n": pa.int64(), "x": pa.float64(), "s": pa.string()})
TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(list(",;\"'\n\r\t \\/{}[]NA")),
        st.characters(exclude_categories=("Cs",)),
    ),
    max_size=12,
)
ROWS = st.lists(
    st.tuples(
        st.none() | st.integers(-(2**63), 2**63 - 1),
        st.none() | st.floats(allow_nan=False, allow_infinity=False),
        st.none() | TEXT | st.sampled_from(["", "NA", "null", "nan", "1", "True", "2020-01-01"]),
    ),
    max_size=25,
)
FORMATS = [".parquet", ".jsonl", ".jsonl.gz", ".json", ".csv", ".tsv.zst", ".arrow"]
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def table_of(rows: list[tuple[int | None, float | None, str | None]]) -> pa.Table:
    columns = list(zip(*rows, strict=True)) if rows else [[], [], []]
    return pa.Table.from_arrays(
        [pa.array(list(column), field.type) for column, field in zip(columns, SCHEMA, strict=True)],
        schema=SCHEMA,
    )


def schema_option(suffix: str) -> dict[str, Any]:
    # Text formats do not carry types: the reader is told them, as features would.
    return {} if suffix in (".parquet", ".arrow") else {"schema": SCHEMA}


@SETTINGS
@given(rows=ROWS, chunk=st.integers(1, 10), suffix=st.sampled_from(FORMATS))
def test_write_then_read_is_identity(
    rows: list[tuple[int | None, float | None, str | None]], chunk: int, suffix: str
) -> None:
    table = table_of(rows)
    options: dict[str, Any] = {"lines": False} if suffix == ".json" else {}
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / f"data{suffix}")
        batches = table.to_batches(max_chunksize=chunk)
        assert write_batches(batches, path, schema=SCHEMA, **options) == len(rows)
        result = read_all(iter_batches(path, batch_size=chunk, **schema_option(suffix)))
    assert result.schema == SCHEMA
    assert result.to_pylist() == table.to_pylist()


@SETTINGS
@given(
    rows=ROWS,
    start=st.integers(0, 30),
    batch_size=st.integers(1, 8),
    suffix=st.sampled_from([".parquet", ".jsonl", ".csv.gz", ".arrow"]),
)
def test_resume_reads_exactly_the_rest(
    rows: list[tuple[int | None, float | None, str | None]],
    start: int,
    batch_size: int,
    suffix: str,
) -> None:
    table = table_of(rows)
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / f"data{suffix}")
        sizes: dict[str, Any] = {"row_group_size": 4} if suffix == ".parquet" else {}
        write_batches([table], path, **sizes)
        options = schema_option(suffix)
        if suffix != ".parquet" and suffix != ".arrow":
            options["block_size"] = 64
        batches = list(iter_batches(path, batch_size=batch_size, start_row=start, **options))
    assert all(b.num_rows <= batch_size for b in batches)
    assert read_all(batches).to_pylist() == table.slice(start).to_pylist()


@SETTINGS
@given(lines=st.lists(TEXT.filter(lambda t: "\n" not in t and "\r" not in t), max_size=30))
def test_text_lines_round_trip(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "a.txt.gz")
        write_batches([pa.table({"text": pa.array(lines, pa.string())})], path)
        result = read_all(iter_batches(path, block_size=16))
    assert result.column("text").to_pylist() == lines

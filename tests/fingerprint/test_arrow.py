"""Arrow data hashes from buffers, the same however it is chunked or sliced."""

from __future__ import annotations

import datetime
import decimal
import itertools

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_ds.fingerprint import ColumnDigests, Hasher, arrow_digest

ROWS = 40


def _sample_table() -> pa.Table:
    """One column per layout the hasher reads: fixed width, bits, bytes, nesting, encodings."""
    rows = range(ROWS)
    return pa.table(
        {
            "int": pa.array([i if i % 5 else None for i in rows], pa.int64()),
            "float": pa.array([i / 3 for i in rows], pa.float32()),
            "bool": pa.array([None if i % 7 == 0 else i % 2 == 0 for i in rows]),
            "text": pa.array([None if i % 6 == 0 else "é" * (i % 4) for i in rows]),
            "large_text": pa.array([str(i) for i in rows], pa.large_string()),
            "binary": pa.array([bytes([i]) * (i % 3) for i in rows], pa.binary()),
            "fixed": pa.array([bytes([i, i]) for i in rows], pa.binary(2)),
            "when": pa.array(
                [datetime.datetime(2024, 1, 1 + i % 28) for i in rows], pa.timestamp("ms", "UTC")
            ),
            "day": pa.array([datetime.date(2024, 1, 1 + i % 28) for i in rows], pa.date32()),
            "money": pa.array([decimal.Decimal(i) / 100 for i in rows], pa.decimal128(10, 2)),
            "list": pa.array(
                [None if i % 9 == 0 else list(range(i % 4)) for i in rows], pa.list_(pa.int32())
            ),
            "nested": pa.array(
                [[[str(i)]] * (i % 3) for i in rows], pa.list_(pa.list_(pa.string()))
            ),
            "pair": pa.array([[i, i + 1] for i in rows], pa.list_(pa.int16(), 2)),
            "struct": pa.array(
                [None if i % 8 == 0 else {"a": i, "b": str(i)} for i in rows],
                pa.struct([("a", pa.int64()), ("b", pa.string())]),
            ),
            "map": pa.array([[("k", i)] * (i % 2) for i in rows], pa.map_(pa.string(), pa.int64())),
            "category": pa.array([["x", "y", None][i % 3] for i in rows]).dictionary_encode(),
            "nothing": pa.nulls(ROWS),
        }
    )


TABLE = _sample_table()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=ROWS), min_size=1, max_size=12))
def test_chunking_does_not_change_the_hash(cuts: list[int]) -> None:
    boundaries = sorted({0, ROWS, *cuts})
    pieces = [TABLE.slice(a, b - a) for a, b in itertools.pairwise(boundaries)]
    rechunked = pa.concat_tables(pieces)
    assert rechunked.column(0).num_chunks == len(pieces)
    assert Hasher.hash(rechunked) == Hasher.hash(TABLE)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=ROWS), st.integers(min_value=0, max_value=ROWS))
def test_a_slice_hashes_like_a_fresh_copy_of_it(start: int, length: int) -> None:
    sliced = TABLE.slice(start, length)
    fresh = pa.Table.from_pylist(sliced.to_pylist(), schema=TABLE.schema)
    assert Hasher.hash(sliced) == Hasher.hash(fresh)


def test_every_value_matters() -> None:
    baseline = Hasher.hash(TABLE)
    for index, name in enumerate(TABLE.column_names):
        column = TABLE.column(name).to_pylist()
        column[3], column[4] = column[4], column[3]
        if column[3] == column[4]:
            continue
        changed = TABLE.set_column(index, name, pa.array(column, TABLE.schema.field(name).type))
        assert Hasher.hash(changed) != baseline, name


def test_null_differs_from_every_value() -> None:
    assert Hasher.hash(pa.array([0, None])) != Hasher.hash(pa.array([0, 0]))
    assert Hasher.hash(pa.array(["", None])) != Hasher.hash(pa.array(["", ""]))
    assert Hasher.hash(pa.array([[], None])) != Hasher.hash(pa.array([[], []]))


def test_string_boundaries_matter() -> None:
    assert Hasher.hash(pa.array(["ab", "c"])) != Hasher.hash(pa.array(["a", "bc"]))


def test_schema_names_types_and_nullability_matter_but_metadata_does_not() -> None:
    table = pa.table({"a": [1, 2]})
    assert Hasher.hash(table) != Hasher.hash(table.rename_columns(["b"]))
    assert Hasher.hash(table) != Hasher.hash(table.cast(pa.schema([("a", pa.int32())])))
    required = table.cast(pa.schema([pa.field("a", pa.int64(), nullable=False)]))
    assert Hasher.hash(table) != Hasher.hash(required)
    assert Hasher.hash(table) == Hasher.hash(table.replace_schema_metadata({"k": "v"}))


def test_arrays_chunked_arrays_tables_and_batches() -> None:
    array = pa.array([1, 2, 3])
    chunked = pa.chunked_array([[1], [2, 3]])
    assert Hasher.hash(array) == Hasher.hash(chunked)
    batch = pa.record_batch({"a": array})
    assert Hasher.hash(batch) == Hasher.hash(pa.Table.from_arrays([chunked], names=["a"]))
    assert Hasher.hash(array) != Hasher.hash(batch)


def test_dictionary_encoding_is_hashed_by_value() -> None:
    plain = pa.array(["x", "y", "x"])
    assert Hasher.hash(plain.dictionary_encode()) == Hasher.hash(plain)


def test_nested_in_python_containers() -> None:
    assert Hasher.hash({"t": TABLE}) == Hasher.hash(
        {"t": pa.concat_tables([TABLE.slice(0, 5), TABLE.slice(5)])}
    )


@pytest.mark.parametrize("chunks", [1, 7, 1000])
def test_large_tables_hash_the_same_at_any_chunk_count(chunks: int) -> None:
    rows = 20_000
    table = pa.table({"n": pa.array(range(rows)), "s": pa.array([str(i) for i in range(rows)])})
    size = -(-rows // chunks)
    rechunked = pa.Table.from_batches(table.to_batches(max_chunksize=size))
    assert Hasher.hash(rechunked) == Hasher.hash(table)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=ROWS), min_size=1, max_size=12))
def test_chunks_with_buffers_of_their_own_hash_like_one_chunk(cuts: list[int]) -> None:
    # Copies, not slices: every chunk starts its own buffers (as a table built batch by batch).
    boundaries = sorted({0, ROWS, *cuts})
    pieces = [
        pa.Table.from_pylist(TABLE.slice(a, b - a).to_pylist(), TABLE.schema)
        for a, b in itertools.pairwise(boundaries)
    ]
    rechunked = pa.concat_tables(pieces)
    assert Hasher.hash(rechunked) == Hasher.hash(TABLE)


def _encodings() -> dict[str, tuple[pa.Array, pa.Array]]:
    """Pairs of (encoded array, the same values in a plain layout)."""
    texts = pa.array(["a", "bb", None, "a", "ccc"])
    return {
        "string_view": (texts.cast(pa.string_view()), texts.cast(pa.large_string())),
        "run_end": (
            pc.run_end_encode(pa.array([1, 1, 1, 2, 2])),  # pyright: ignore[reportAttributeAccessIssue]
            pa.array([1, 1, 1, 2, 2]),
        ),
        "uuid": (
            pa.ExtensionArray.from_storage(
                pa.uuid(), pa.array([bytes(16), bytes([1]) * 16], pa.binary(16))
            ),
            pa.array([bytes(16), bytes([1]) * 16], pa.binary(16)),
        ),
    }


@pytest.mark.parametrize("name", sorted(_encodings()))
def test_encoded_arrays_hash_by_value_and_ignore_chunking(name: str) -> None:
    encoded, plain = _encodings()[name]
    assert Hasher.hash(encoded) == Hasher.hash(plain)
    split = pa.chunked_array([encoded.slice(0, 1), encoded.slice(1)], encoded.type)
    assert Hasher.hash(split) == Hasher.hash(encoded)


def test_column_digests_fed_in_pieces_are_the_digests_of_the_whole_columns() -> None:
    whole = pa.table({"a": [1, None, 3, 4], "s": ["x", None, "zz", ""]})
    digests = ColumnDigests()
    for start in (0, 1, 3):
        digests.feed(whole.slice(start, {0: 1, 1: 2, 3: 1}[start]))
    assert digests.hexdigests() == {
        name: arrow_digest(whole.column(name)) for name in whole.column_names
    }
    digests.feed(pa.table({"a": ["now a string"]}))  # a type change, and "s" missing
    assert digests.hexdigests() == {}


def _large_chunks(nulls: bool = True) -> pa.ChunkedArray:
    """Text in chunks of about 1 MB each (as a Parquet file is read), with slices and nulls."""
    chunks = []
    for index in range(6):
        values = [
            None if nulls and i % 97 == 0 else f"{index}-{i}-" + "x" * 1000 for i in range(1000)
        ]
        chunks.append(pa.array(values, pa.large_string()))
    chunks[2] = chunks[2].slice(10, 900)  # a chunk that is a slice of its buffers
    return pa.chunked_array(chunks)


def test_large_chunks_hash_as_their_values_in_any_chunking() -> None:
    column = _large_chunks()
    combined = column.combine_chunks()
    assert arrow_digest(column) == arrow_digest(combined)
    rows = len(combined)
    rechunked = pa.chunked_array([combined.slice(0, 7), combined.slice(7, rows - 7)])
    assert arrow_digest(rechunked) == arrow_digest(combined)
    changed = pa.chunked_array([*column.chunks[:5], pc.utf8_upper(column.chunks[5])])
    assert arrow_digest(changed) != arrow_digest(column)


def test_large_chunks_without_nulls_are_hashed_in_place_not_copied() -> None:
    column = _large_chunks(nulls=False)
    table = pa.Table.from_arrays([column], ["text"])
    size = column.nbytes
    previous = pa.default_memory_pool()
    pool = pa.proxy_memory_pool(previous)  # counts what hashing allocates, and only that
    pa.set_memory_pool(pool)
    try:
        digests = ColumnDigests()
        digests.feed(table)
        found = digests.hexdigests()
    finally:
        pa.set_memory_pool(previous)
    assert found == {"text": arrow_digest(column)}
    peak = pool.max_memory()
    assert peak is not None
    assert peak < size // 10, (peak, size)

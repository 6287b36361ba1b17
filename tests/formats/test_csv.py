from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from dagster_ds import load_dataset
from dagster_ds.errors import MalformedFileError, UnsupportedTypeError
from dagster_ds.formats import ReadStats, iter_batches, iter_csv_batches, write_batches

from ._helpers import names_in, read_all


@pytest.mark.parametrize(
    "suffix", [".csv", ".csv.gz", ".csv.bz2", ".csv.zst", ".csv.xz", ".tsv", ".tsv.gz"]
)
def test_round_trip_with_compression(tmp_path: Path, sample_table: pa.Table, suffix: str) -> None:
    path = tmp_path / f"data{suffix}"
    write_batches(sample_table.to_batches(max_chunksize=2), path)
    result = read_all(iter_batches(str(path), schema=sample_table.schema))
    assert result.equals(sample_table)


def test_tsv_uses_tabs(tmp_path: Path) -> None:
    path = tmp_path / "a.tsv"
    write_batches([pa.table({"a": [1], "b": ["x,y"]})], path)
    assert path.read_text() == "a\tb\n1\tx,y\n"


def test_writer_follows_the_anchor_conventions(tmp_path: Path) -> None:
    table = pa.table(
        {
            "i": pa.array([1, None, 3]),
            "f": [1.0, float("nan"), 2.5],
            "b": [True, False, None],
            "s": ["plain", "", "NA"],
            "t": ['a "q"', "x,y", None],
        }
    )
    path = tmp_path / "a.csv"
    write_batches(table.to_batches(max_chunksize=2), path)
    assert path.read_text() == (
        'i,f,b,s,t\n1,1.0,True,plain,"a ""q"""\n,,False,"","x,y"\n3,2.5,,"NA",\n'
    )
    indexed = tmp_path / "indexed.csv"
    write_batches(table.select(["i"]).to_batches(max_chunksize=1), indexed, index=True)
    assert indexed.read_text() == ",i\n0,1\n1,\n2,3\n"


def test_types_inferred_and_empty_fields_are_null(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text('a,b,c\n1,x,1.5\n2,,\n3,"",2\n')
    result = read_all(iter_csv_batches(path))
    assert result.schema == pa.schema({"a": pa.int64(), "b": pa.string(), "c": pa.float64()})
    assert result.column("b").to_pylist() == ["x", None, ""]


def test_delimiter_column_names_and_skip_rows(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("# generated\n# by hand\n1;one\n2;two\n")
    result = read_all(
        iter_batches(str(path), "csv", delimiter=";", column_names=["n", "word"], skip_rows=2)
    )
    assert result.to_pylist() == [{"n": 1, "word": "one"}, {"n": 2, "word": "two"}]


def test_ragged_row_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "ragged.csv"
    rows = [f"{i},v{i},{i * 2}" for i in range(40)]
    rows[5] = '5,"multi\nline",10'
    rows[30] = "30,v30"
    path.write_text("a,b,c\n" + "\n".join(rows[:20]) + "\n\n" + "\n".join(rows[20:]) + "\n")
    # header (1) + 20 rows, one of them spanning two lines (22) + blank (23) + 10 rows.
    with pytest.raises(MalformedFileError) as raised:
        read_all(iter_csv_batches(path, block_size=64))
    error = raised.value
    assert (error.path, error.line) == (str(path), 34)
    assert "expected 3 fields, found 2" in str(error)
    assert "30,v30" in str(error)


def test_value_not_fitting_the_schema_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "a.csv.gz"
    write_batches([pa.table({"n": ["1", "2", "x3"]})], path)
    with pytest.raises(MalformedFileError, match="'x3'") as raised:
        read_all(iter_csv_batches(path, schema=pa.schema({"n": pa.int64()})))
    assert raised.value.line == 4


@pytest.mark.parametrize("start", [0, 3, 64, 199, 200])
def test_resume(tmp_path: Path, start: int) -> None:
    path = tmp_path / "a.csv"
    table = pa.table({"a": list(range(200)), "b": [f"r{i}\nmore" for i in range(200)]})
    write_batches([table], path)
    stats = ReadStats()
    resumed = read_all(
        iter_csv_batches(path, start_row=start, batch_size=50, block_size=512, stats=stats)
    )
    assert resumed.equals(table.slice(start))


def test_nested_columns_are_refused_and_leave_no_file(tmp_path: Path) -> None:
    table = pa.table({"a": [[1, 2]]})
    with pytest.raises(UnsupportedTypeError, match="Column 'a' of type list<item: int64>"):
        write_batches([table], tmp_path / "a.csv")
    assert names_in(tmp_path) == []


def _with_a_long_cell(path: Path, cell: str, *, before: int = 20_000, after: int = 3) -> None:
    """``before`` short rows (over a block of them), one row with ``cell``, ``after`` rows."""
    rows = [f"{i},short {i}\n" for i in range(before)]
    rows.append(f'{before},"{cell}"\n')
    rows += [f"{i},short {i}\n" for i in range(before + 1, before + 1 + after)]
    path.write_text("id,text\n" + "".join(rows))


@pytest.mark.parametrize("streaming", [False, True])
def test_a_ten_megabyte_cell_loads(tmp_path: Path, streaming: bool) -> None:
    path = tmp_path / "long.csv"
    cell = "x" * (10 << 20)
    _with_a_long_cell(path, cell)
    loaded = load_dataset("csv", data_files=str(path), split="train", streaming=streaming)
    rows = list(loaded)
    assert [row["id"] for row in rows] == list(range(20_004))
    assert rows[20_000]["text"] == cell
    assert rows[19_999]["text"] == "short 19999"
    assert rows[20_003]["text"] == "short 20003"


def test_a_long_cell_keeps_the_types_of_the_first_block(tmp_path: Path) -> None:
    path = tmp_path / "long.csv"
    _with_a_long_cell(path, "y" * (3 << 20))
    batches = list(iter_csv_batches(str(path), batch_size=7_000))
    assert {batch.schema.field("id").type for batch in batches} == {pa.int64()}
    assert read_all(batches).num_rows == 20_004


def test_a_row_longer_than_max_row_bytes_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "long.csv"
    # A quoted line break in row 0 puts the long row (row 20000) on line 20003.
    _with_a_long_cell(path, "a\nb\nc\nd\n" + "z" * (5 << 20), before=20_000)
    content = path.read_text().replace("0,short 0\n", '0,"short\n0"\n', 1)
    path.write_text(content)
    with pytest.raises(
        MalformedFileError, match=r"long\.csv.* line 20003 .*max_row_bytes="
    ) as info:
        list(iter_csv_batches(str(path), max_row_bytes=2 << 20))
    assert info.value.line == 20_003
    assert str(info.value.excerpt).startswith("20000,")

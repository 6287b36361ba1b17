"""Loading never changes values silently: it loads exactly or names the file and line."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dagster_ds import Dataset, MalformedFileError, load_dataset


def test_a_json_integer_beyond_int64_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text(
        '{"a": 1}\n{"a": 2, "t": "12345678901234567890123"}\n{"a": 99999999999999999999}\n'
    )
    with pytest.raises(
        MalformedFileError, match=r"big.jsonl.*line 3.*99999999999999999999"
    ) as info:
        load_dataset("json", data_files=str(path), split="train")
    assert info.value.line == 3


def test_a_json_list_with_an_integer_beyond_int64_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text('[{"a": 1}, {"a": {"b": [-99999999999999999999]}}]')
    with pytest.raises(MalformedFileError, match=r"element 1 .*int64"):
        load_dataset("json", data_files=str(path), split="train")


def test_int64_bounds_and_long_strings_load_exactly(tmp_path: Path) -> None:
    path = tmp_path / "edge.jsonl"
    path.write_text(
        '{"a": 9223372036854775807, "t": "99999999999999999999"}\n'
        '{"a": -9223372036854775808, "t": "x"}\n'
    )
    loaded = load_dataset("json", data_files=str(path), split="train")
    assert loaded["a"][:] == [2**63 - 1, -(2**63)]
    assert loaded["t"][:] == ["99999999999999999999", "x"]


def test_a_latin1_byte_in_a_csv_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "l1.csv"
    path.write_bytes(b"a,b\n1,x\n2,caf\xe9\n")
    with pytest.raises(MalformedFileError, match=r"l1.csv.*line 3.*encoding=") as info:
        load_dataset("csv", data_files=str(path), split="train")
    assert info.value.line == 3


def test_a_csv_in_latin1_loads_with_its_encoding(tmp_path: Path) -> None:
    path = tmp_path / "l1.csv"
    path.write_bytes(b"a,b\n1,x\n2,caf\xe9\n")
    loaded = load_dataset("csv", data_files=str(path), split="train", encoding="latin-1")
    assert loaded["b"][:] == ["x", "café"]


def test_a_csv_header_with_a_repeated_name_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "aa.csv"
    path.write_text("a,a\n1,2\n")
    with pytest.raises(MalformedFileError, match=r"aa.csv.*line 1.*\['a'\].*column_names="):
        load_dataset("csv", data_files=str(path), split="train")


def test_a_flipped_byte_in_a_parquet_page_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "x.parquet"
    Dataset.from_dict({"a": list(range(1000))}).to_parquet(str(path), compression="none")
    column = pq.read_metadata(path).row_group(0).column(0)
    assert column.total_compressed_size > 1000
    data = bytearray(path.read_bytes())
    data[column.data_page_offset + 500] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(MalformedFileError, match=r"x.parquet.*row group 0.*checksum"):
        load_dataset("parquet", data_files=str(path), split="train")


def test_parquet_files_we_write_carry_page_checksums_the_anchor_reads(tmp_path: Path) -> None:
    path = tmp_path / "x.parquet"
    Dataset.from_dict({"a": list(range(10))}).to_parquet(str(path))
    assert pq.read_table(path, page_checksum_verification=True)["a"].to_pylist() == list(range(10))

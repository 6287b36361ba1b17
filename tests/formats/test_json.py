from __future__ import annotations

import bz2
import gzip
import json
import lzma
from pathlib import Path

import pyarrow as pa
import pytest

from dagster_ds.errors import FormatOptionError, MalformedFileError
from dagster_ds.formats import ReadStats, iter_batches, iter_json_batches, write_batches

from ._helpers import read_all


@pytest.mark.parametrize(
    "suffix", [".jsonl", ".json", ".ndjson.gz", ".jsonl.bz2", ".jsonl.zst", ".jsonl.xz"]
)
def test_round_trip_with_compression(tmp_path: Path, sample_table: pa.Table, suffix: str) -> None:
    path = str(tmp_path / f"data{suffix}")
    assert write_batches(sample_table.to_batches(max_chunksize=2), path) == 5
    result = read_all(iter_batches(path, schema=sample_table.schema))
    assert result.equals(sample_table)


def test_compressed_files_are_really_compressed(tmp_path: Path, sample_table: pa.Table) -> None:
    openers = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
    plain = tmp_path / "plain.jsonl"
    write_batches([sample_table], plain)
    for suffix, opener in openers.items():
        path = tmp_path / f"data.jsonl{suffix}"
        write_batches([sample_table], path)
        with opener(path, "rb") as stream:
            assert stream.read() == plain.read_bytes()


def test_types_are_inferred_without_schema(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1, "b": "x", "c": [1, 2]}\n\n{"a": 2, "b": null, "c": []}\n')
    result = read_all(iter_json_batches(path))
    assert result.schema == pa.schema(
        {"a": pa.int64(), "b": pa.string(), "c": pa.list_(pa.int64())}
    )
    assert result.to_pylist() == [{"a": 1, "b": "x", "c": [1, 2]}, {"a": 2, "b": None, "c": []}]


def test_later_blocks_use_the_first_blocks_schema(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = [json.dumps({"a": i, "b": f"v{i}"}) for i in range(200)] + ['{"a": 200}']
    path.write_text("\n".join(lines))
    batches = list(iter_json_batches(path, block_size=256))
    assert len(batches) > 10
    assert {b.schema for b in batches} == {batches[0].schema}
    assert read_all(batches).column("b").to_pylist()[-1] is None


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = [json.dumps({"a": i}) for i in range(50)]
    path.write_text("\n".join([*good[:30], "", '{"a": 31, oops}', *good[30:]]) + "\n")
    with pytest.raises(MalformedFileError) as raised:
        read_all(iter_json_batches(path, block_size=128))
    error = raised.value
    assert (error.path, error.line) == (str(path), 32)
    assert "line 32" in str(error)
    assert "oops" in str(error)
    assert isinstance(error, ValueError)


@pytest.mark.parametrize(
    ("line", "reason"),
    [("[1, 2]", "expected a JSON object"), ('{"a": "text"}', "changed from number to string")],
)
def test_non_object_or_type_change_names_the_line(tmp_path: Path, line: str, reason: str) -> None:
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(gzip.compress(f'{{"a": 1}}\n{{"a": 2}}\n{line}\n'.encode()))
    with pytest.raises(MalformedFileError, match=reason) as raised:
        read_all(iter_json_batches(path))
    assert raised.value.line == 3


def test_value_not_fitting_the_inferred_type_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = [json.dumps({"a": i, "b": None}) for i in range(300)]
    lines[250] = json.dumps({"a": 250.5, "b": None})
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MalformedFileError, match="line 251 does not fit the schema") as raised:
        read_all(iter_json_batches(path, block_size=1024))
    assert raised.value.line == 251
    assert "Pass schema=" in str(raised.value)


def test_key_appearing_after_the_first_block_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = [json.dumps({"a": i}) for i in range(100)]
    lines[80] = json.dumps({"a": 80, "late": "x"})
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MalformedFileError, match="key 'late' first appears at line 81"):
        read_all(iter_json_batches(path, block_size=200))
    schema = pa.schema({"a": pa.int64(), "late": pa.string()})
    result = read_all(iter_json_batches(path, block_size=200, schema=schema))
    assert result.column("late").to_pylist()[80] == "x"


def test_whole_json_array_and_field(tmp_path: Path, sample_table: pa.Table) -> None:
    array = tmp_path / "array.json"
    write_batches(sample_table.to_batches(max_chunksize=2), array, lines=False)
    assert isinstance(json.loads(array.read_text()), list)
    assert read_all(iter_json_batches(array, schema=sample_table.schema)).equals(sample_table)

    document = tmp_path / "doc.json"
    document.write_text(
        json.dumps({"version": 1, "data": [{"x": 1}, {"x": 2, "y": "b"}]}, indent=2)
    )
    result = read_all(iter_json_batches(document, field="data"))
    assert result.to_pylist() == [{"x": 1, "y": None}, {"x": 2, "y": "b"}]
    with pytest.raises(MalformedFileError, match="no top-level key 'rows'"):
        read_all(iter_json_batches(document, field="rows"))

    strings = tmp_path / "strings.json"
    strings.write_text('["a", "b"]')
    assert read_all(iter_json_batches(strings)).to_pylist() == [{"text": "a"}, {"text": "b"}]

    broken = tmp_path / "broken.json"
    broken.write_text('[\n  {"x": 1},\n  {"x": 2,,}\n]')
    with pytest.raises(MalformedFileError, match="line 3") as raised:
        read_all(iter_json_batches(broken))
    assert raised.value.line == 3


@pytest.mark.parametrize("start", [0, 1, 37, 99, 100, 150])
def test_resume_skips_lines_without_parsing(tmp_path: Path, start: int) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(
        "\n".join(json.dumps({"a": i, "s": "x" * (i % 7)}) for i in range(100)) + "\n\n"
    )
    full = read_all(iter_json_batches(path))
    stats = ReadStats()
    resumed = read_all(iter_json_batches(path, start_row=start, block_size=300, stats=stats))
    assert resumed.equals(full.slice(start))
    # Only the first block is parsed to fix the schema; skipped lines elsewhere are not.
    if start >= 50:
        assert stats.rows_read < 100


def test_resume_with_filter_counts_filtered_rows(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(json.dumps({"a": i}) for i in range(100)))
    filtered = read_all(iter_json_batches(path, filters=[("a", ">=", 50)], start_row=10))
    assert filtered.column("a").to_pylist() == list(range(60, 100))


def test_byte_order_mark_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\n\n   \n{"a": 2}\n')
    assert read_all(iter_json_batches(path)).column("a").to_pylist() == [1, 2]


def test_empty_file_with_schema(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    schema = pa.schema({"a": pa.int64()})
    batches = list(iter_json_batches(path, schema=schema))
    assert [(b.num_rows, b.schema) for b in batches] == [(0, schema)]


def test_writer_conventions(tmp_path: Path) -> None:
    table = pa.table({"x": [1.0, float("nan"), float("inf")], "s": ["é", "a/b", None]})
    lines = tmp_path / "a.jsonl"
    write_batches([table], lines)
    assert lines.read_text(encoding="utf-8") == (
        '{"x":1.0,"s":"é"}\n{"x":null,"s":"a/b"}\n{"x":null,"s":null}\n'
    )
    ascii_path = tmp_path / "b.jsonl"
    write_batches([table.slice(0, 1)], ascii_path, ensure_ascii=True)
    assert ascii_path.read_text() == '{"x":1.0,"s":"\\u00e9"}\n'
    empty = tmp_path / "empty.json"
    write_batches([table.slice(0, 0)], empty, lines=False)
    assert empty.read_text() == "[]\n"
    with pytest.raises(FormatOptionError, match="orient 'split'"):
        write_batches([table], tmp_path / "c.json", orient="split")
    assert not (tmp_path / "c.json").exists()

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow as pa
import pytest

from dagster_ds.errors import MalformedFileError, UnsupportedTypeError
from dagster_ds.formats import ReadStats, iter_batches, iter_text_batches, write_batches

from ._helpers import read_all


def texts(path: Path, **options: object) -> list[str]:
    return read_all(iter_text_batches(path, **options)).column("text").to_pylist()  # type: ignore[arg-type]


def test_one_row_per_line_as_the_anchor(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"first\r\nsecond\n\nfourth\rfifth")
    assert texts(path) == ["first", "second", "", "fourth", "fifth"]
    assert texts(path, keep_linebreaks=True) == ["first\n", "second\n", "\n", "fourth\n", "fifth"]
    path.write_bytes(b"a\nb\n")
    assert texts(path) == ["a", "b"]
    assert texts(path, keep_linebreaks=True) == ["a\n", "b\n"]
    path.write_bytes(b"")
    batches = list(iter_text_batches(path))
    assert [(b.num_rows, b.schema.names) for b in batches] == [(0, ["text"])]


def test_blocks_and_compression(tmp_path: Path) -> None:
    lines = [f"line {i} " + "é" * (i % 5) for i in range(500)]
    path = tmp_path / "a.txt.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    batches = list(iter_batches(str(path), block_size=256, batch_size=64))
    assert max(b.num_rows for b in batches) <= 64
    assert read_all(batches).column("text").to_pylist() == lines


@pytest.mark.parametrize("start", [0, 1, 17, 250, 499, 500, 600])
def test_resume_counts_lines_without_decoding(tmp_path: Path, start: int) -> None:
    lines = [f"l{i}" for i in range(500)]
    path = tmp_path / "a.txt"
    path.write_text("\n".join(lines))
    stats = ReadStats()
    assert texts(path, start_row=start, block_size=100, stats=stats) == lines[start:]
    assert stats.rows_read <= 500 - start + 100


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"ok\nfine\nbad \xff byte\nok\n")
    with pytest.raises(MalformedFileError, match="line 3") as raised:
        texts(path)
    assert raised.value.line == 3


def test_text_writer_round_trip(tmp_path: Path) -> None:
    table = pa.table({"text": ["a", "", "ü", None], "other": [1, 2, 3, 4]})
    path = tmp_path / "out.txt.bz2"
    write_batches(table.to_batches(max_chunksize=3), path)
    assert texts(path) == ["a", "", "ü", ""]
    with pytest.raises(UnsupportedTypeError, match="string column 'text'"):
        write_batches([pa.table({"n": [1]})], tmp_path / "bad.txt")

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from dagster_ds.errors import MalformedFileError
from dagster_ds.formats import iter_arrow_batches, iter_batches, write_batches

from ._helpers import read_all


@pytest.mark.parametrize("file_format", [False, True])
def test_stream_and_file_formats(tmp_path: Path, sample_table: pa.Table, file_format: bool) -> None:
    path = tmp_path / "data.arrow"
    write_batches(sample_table.to_batches(max_chunksize=2), path, file_format=file_format)
    opener = pa.ipc.open_file if file_format else pa.ipc.open_stream
    with pa.memory_map(str(path)) as source:
        assert opener(source).read_all().equals(sample_table)
    assert read_all(iter_arrow_batches(path)).equals(sample_table)
    assert read_all(iter_arrow_batches(path, start_row=3, batch_size=1)).equals(
        sample_table.slice(3)
    )
    projected = read_all(iter_batches(str(path), columns=["text"], filters=pc.field("id") > 1))
    assert projected.column("text").to_pylist() == [
        "",
        'quote " comma , newline \n end',
        "ünï 字",
    ]


def test_memory_url(memory_root: str, sample_table: pa.Table) -> None:
    url = f"{memory_root}/x.arrow"
    write_batches([sample_table], url, file_format=True)
    assert read_all(iter_arrow_batches(url)).equals(sample_table)


def test_not_arrow(tmp_path: Path) -> None:
    path = tmp_path / "bad.arrow"
    path.write_bytes(b"nope nope nope nope")
    with pytest.raises(MalformedFileError, match="not a valid Arrow IPC"):
        read_all(iter_arrow_batches(path))

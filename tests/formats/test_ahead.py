"""Row groups decoded side by side (`RowGroupsAhead`), seen through `iter_parquet_batches`."""

from __future__ import annotations

import multiprocessing
import threading
import time
import warnings
from collections.abc import Generator
from pathlib import Path
from typing import cast

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagster_ds.errors import MalformedFileError
from dagster_ds.formats import iter_parquet_batches
from dagster_ds.formats._ahead import RowGroupsAhead, usable_cores

from ._helpers import read_all

GROUPS = 8
GROUP = 50

pytestmark = pytest.mark.skipif(usable_cores() < 2, reason="decoding ahead needs two cores")


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> str:
    rows = GROUPS * GROUP
    table = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "text": pa.array([f"row {i}" * (i % 7) for i in range(rows)]),
            "score": pa.array([i / 4 if i % 5 else None for i in range(rows)]),
        }
    )
    target = str(tmp_path_factory.mktemp("ahead") / "t.parquet")
    pq.write_table(
        table,
        target,
        row_group_size=GROUP,
        write_page_checksum=True,
        use_dictionary=False,
        compression="none",
    )
    return target


def _decoder_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("dagster_ds-parquet")]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    order=st.permutations(range(GROUPS)).flatmap(
        lambda groups: st.integers(2, GROUPS).map(lambda count: groups[:count])
    ),
    columns=st.sampled_from([None, ["text"], ["score", "id"]]),
    batch_size=st.integers(1, 3 * GROUP),
    start_row=st.integers(0, 3 * GROUP),
)
def test_row_groups_come_whole_and_in_the_order_asked(
    path: str, order: list[int], columns: list[str] | None, batch_size: int, start_row: int
) -> None:
    opened = pq.ParquetFile(path)
    expected = pa.concat_tables([opened.read_row_group(i, columns=columns) for i in order])
    batches = list(
        iter_parquet_batches(
            path, row_groups=order, columns=columns, batch_size=batch_size, start_row=start_row
        )
    )
    assert read_all(batches).equals(expected.slice(start_row))
    assert all(batch.num_rows <= batch_size for batch in batches)
    assert not _decoder_threads()


def test_a_corrupt_row_group_fails_when_reached_after_the_rows_before_it(
    path: str, tmp_path: Path
) -> None:
    corrupt = tmp_path / "corrupt.parquet"
    data = bytearray(Path(path).read_bytes())
    chunk = pq.ParquetFile(path).metadata.row_group(5).column(1)
    data[chunk.data_page_offset + chunk.total_compressed_size // 2] ^= 0xFF
    corrupt.write_bytes(bytes(data))
    batches = iter_parquet_batches(str(corrupt), batch_size=GROUP)
    firsts = [next(batches).column("id")[0].as_py() for _ in range(5)]
    assert firsts == [group * GROUP for group in range(5)]
    with pytest.raises(MalformedFileError, match="row group 5 cannot be read"):
        next(batches)
    assert not _decoder_threads()


def test_stopping_early_stops_the_decoding_threads(path: str) -> None:
    batches = cast("Generator[pa.RecordBatch]", iter_parquet_batches(path, batch_size=10))
    assert next(batches).num_rows == 10
    assert _decoder_threads()
    batches.close()
    assert not _decoder_threads()


def _finish_in_child(batches: object, sink: multiprocessing.SimpleQueue[list[int]]) -> None:
    ids: list[int] = []
    for batch in batches:  # pyright: ignore[reportGeneralTypeIssues]
        ids.extend(batch.column("id").to_pylist())
    sink.put(ids)


def test_an_iteration_forked_mid_way_finishes_in_the_child(path: str) -> None:
    batches = iter_parquet_batches(path, batch_size=GROUP, columns=["id"])
    first = next(batches).column("id").to_pylist()
    context = multiprocessing.get_context("fork")
    sink: multiprocessing.SimpleQueue[list[int]] = context.SimpleQueue()
    child = context.Process(target=_finish_in_child, args=(batches, sink))
    with warnings.catch_warnings():  # Python 3.12+ warns of forking a threaded process
        warnings.simplefilter("ignore", DeprecationWarning)
        child.start()
    child.join(timeout=30)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child did not finish the iteration in 30 s")
    assert child.exitcode == 0
    assert first + sink.get() == list(range(GROUPS * GROUP))
    rest = [value for batch in batches for value in batch.column("id").to_pylist()]
    assert first + rest == list(range(GROUPS * GROUP))


class _RecordingFile(pq.ParquetFile):
    """A Parquet file that records which row groups were decoded from it."""

    def __init__(self, path: str, decoded: list[int]) -> None:
        super().__init__(path)
        self._decoded = decoded

    def read_row_group(
        self,
        i: int,
        columns: list[str] | None = None,
        use_threads: bool = True,
        use_pandas_metadata: bool = False,
    ) -> pa.Table:
        self._decoded.append(i)
        return super().read_row_group(i, columns, use_threads, use_pandas_metadata)


def test_decoding_runs_at_most_two_row_groups_ahead_of_the_reader(path: str) -> None:
    decoded: list[int] = []
    files = [_RecordingFile(path, decoded) for _ in range(2)]
    ahead = RowGroupsAhead(files, range(GROUPS), None, lambda: pq.ParquetFile(path))
    try:
        for index in range(3):
            ahead.table(index)
            ahead_of_reader = list(range(min(index + 3, GROUPS)))
            deadline = time.monotonic() + 10
            while len(decoded) < len(ahead_of_reader) and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.05)  # time enough to decode further ahead, if it would
            assert sorted(decoded) == ahead_of_reader
    finally:
        ahead.close()

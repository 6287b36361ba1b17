"""Reading ahead: the same items, errors where they belong, sources closed, fork refused."""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dagster_ds import IterableDataset, interleave_datasets, load_dataset
from dagster_ds.errors import InvalidStateError
from dagster_ds.streaming._readahead import read_ahead


def test_items_come_in_order_and_an_error_comes_where_its_item_would() -> None:
    def items() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("third item broken")

    reader = read_ahead(items())
    assert [next(reader), next(reader)] == [1, 2]
    with pytest.raises(ValueError, match="third item broken"):
        next(reader)


def test_closing_early_closes_the_source_once_no_thread_advances_it() -> None:
    events: list[str] = []
    advancing = threading.Event()
    release = threading.Event()

    def items() -> Iterator[int]:
        try:
            yield 0
            advancing.set()
            release.wait(5)  # the thread is inside the source when the reader closes
            yield 1
            yield 2
        finally:
            events.append("closed")

    reader = read_ahead(items())
    assert next(reader) == 0
    assert advancing.wait(5)
    threading.Timer(0.2, release.set).start()
    reader.close()  # waits for the thread, then closes the source
    assert events == ["closed"]


def test_a_stream_continued_after_a_fork_fails_clearly_in_the_child(tmp_path: Path) -> None:
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": list(range(30_000))}), path, row_group_size=10_000)
    stream = iter(load_dataset("parquet", data_files=str(path), split="train", streaming=True))
    assert next(stream) == {"id": 0}
    read, write = os.pipe()
    with warnings.catch_warnings():  # 3.12+ warns that a thread (the reader's) exists
        warnings.simplefilter("ignore", DeprecationWarning)
        child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        os.close(read)
        try:
            for _ in stream:
                pass
            message = b"no error"
        except InvalidStateError as error:
            message = str(error).encode()
        except BaseException as error:  # anything else is a failure, reported
            message = repr(error).encode()
        os.write(write, message)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        message = pipe.read().decode()
    os.waitpid(child, 0)
    assert "after a fork" in message, message
    assert sum(1 for _ in stream) == 29_999  # the parent goes on unharmed


def test_many_interleaved_sources_share_a_fixed_number_of_threads(tmp_path: Path) -> None:
    sources = []
    for index in range(40):
        path = tmp_path / f"part-{index}.parquet"
        pq.write_table(pa.table({"id": list(range(index * 100, index * 100 + 100))}), path)
        sources.append(load_dataset("parquet", data_files=str(path), split="train", streaming=True))
    before = threading.active_count()
    mixed = interleave_datasets(sources, stopping_strategy="all_exhausted")
    rows = iter(mixed)
    first = [next(rows) for _ in range(80)]  # every source open at once
    assert threading.active_count() - before <= 2
    assert sorted(row["id"] for row in [*first, *rows]) == list(range(4000))


def test_resuming_from_any_state_gives_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": list(range(2500))}), path, row_group_size=300)
    for stop in (0, 1, 299, 300, 1234, 2499):
        stream: IterableDataset = load_dataset(
            "parquet", data_files=str(path), split="train", streaming=True
        )
        rows = iter(stream)
        head = [next(rows)["id"] for _ in range(stop)]
        state = stream.state_dict()
        del rows  # ends the iteration
        stream.load_state_dict(state)
        assert head + [row["id"] for row in stream] == list(range(2500))

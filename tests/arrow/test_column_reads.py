"""What each output entry records of its function's reads, and column fingerprints."""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_ds import Dataset, load_dataset
from dagster_ds.arrow._column_reads import column_fingerprints
from dagster_ds.arrow._shards import Shard
from dagster_ds.fingerprint import arrow_digest


def _entry(dataset: Dataset) -> dict[str, object]:
    entry = dataset._shards[0].entries[0]  # pyright: ignore[reportPrivateUsage]
    names = ("column_reads", "read_fingerprints", "written", "column_key")
    return {name: entry.metadata_item(name) for name in names}


def test_a_map_records_the_columns_it_read_and_wrote() -> None:
    dataset = Dataset.from_dict({"text": ["ab", "c"], "label": [0, 1]})
    recorded = _entry(dataset.map(lambda b: {"n": [len(t) for t in b["text"]]}, batched=True))
    assert recorded["column_reads"] == ["text"]
    assert recorded["written"] == ["n"]
    assert list(recorded["read_fingerprints"]) == ["text"]  # type: ignore[call-overload]
    assert isinstance(recorded["column_key"], str)


def test_a_per_example_map_records_the_columns_its_examples_read() -> None:
    dataset = Dataset.from_dict({"text": ["ab", "c"], "label": [0, 1], "flag": [False, True]})

    def some(example: dict[str, Any]) -> dict[str, Any]:  # label, read by one example only
        return {"n": len(example["text"]) + (example["label"] if example["flag"] else 0)}

    recorded = _entry(dataset.map(some))
    assert recorded["column_reads"] == ["flag", "label", "text"]
    assert recorded["written"] == ["n"]
    assert isinstance(recorded["column_key"], str)
    names_only = _entry(dataset.map(lambda x: {"n": len(x), "has": "label" in x, "t": x["text"]}))
    assert names_only["column_reads"] == ["text"]


def test_a_per_example_map_that_reads_every_value_records_every_column() -> None:
    dataset = Dataset.from_dict({"text": ["ab", "c"], "label": [0, 1]})
    for function in (
        lambda x: {"n": len(dict(x)["text"])},
        lambda x: {"n": len({**x}["text"])},
        lambda x: {"n": len(list(x.values()))},
        lambda x: {"n": len(repr(x))},
    ):
        assert _entry(dataset.map(function))["column_reads"] == ["label", "text"]


def test_a_per_example_filter_records_the_columns_its_examples_read() -> None:
    dataset = Dataset.from_dict({"text": ["ab", "c"], "label": [0, 1]})
    recorded = _entry(dataset.filter(lambda example: len(example["text"]) > 1))
    assert recorded["column_reads"] == ["text"]


def test_batches_writing_different_columns_are_not_reused_by_their_reads() -> None:
    dataset = Dataset.from_dict({"flag": [True, False, False]})

    def some(batch: dict[str, list[bool]]) -> dict[str, list[int]]:
        return {"one": [1]} if batch["flag"][0] else {"two": [2]}

    recorded = _entry(dataset.map(some, batched=True, batch_size=1, features=None))
    assert recorded["column_reads"] == ["flag"]
    assert recorded["written"] is None


def _fingerprint(table: pa.Table) -> str:
    """The column's fingerprint in a shard of its own (a new shard fingerprint: not memoised)."""
    return column_fingerprints(Shard(uuid.uuid4().hex, table), ["v"])["v"]


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.text(max_size=4)), max_size=20),
    other=st.lists(st.one_of(st.none(), st.text(max_size=4)), max_size=20),
    cuts=st.lists(st.integers(0, 20), max_size=4),
    offset=st.integers(0, 3),
)
def test_equal_column_values_have_equal_fingerprints_however_chunked(
    values: list[str | None], other: list[str | None], cuts: list[int], offset: int
) -> None:
    whole = pa.table({"v": pa.array(values, pa.string())})
    bounds = sorted({0, len(values), *(cut for cut in cuts if cut <= len(values))})
    chunks = [pa.array(values[a:b], pa.string()) for a, b in itertools.pairwise(bounds)]
    chunked = pa.Table.from_arrays([pa.chunked_array(chunks, pa.string())], names=["v"])
    padded = pa.table({"v": pa.array(["pad"] * offset + values, pa.string())}).slice(offset)
    digests = {_fingerprint(table) for table in [whole, chunked, padded]}
    assert len(digests) == 1
    different = _fingerprint(pa.table({"v": pa.array(other, pa.string())}))
    assert (different in digests) == (other == values)


def test_a_map_output_records_the_fingerprints_of_the_columns_it_made() -> None:
    dataset = Dataset.from_dict({"text": ["ab", "c", None], "label": [0, 1, 1]})
    out = dataset.map(
        lambda b: {"n": [len(t or "") for t in b["text"]]}, batched=True, batch_size=1
    )
    recorded = out._shards[0].entries[0].metadata_item("column_fingerprints")  # pyright: ignore[reportPrivateUsage]
    assert recorded == {"n": arrow_digest(out.data.column("n"))}  # the input's kept: not again


def test_a_map_fingerprints_the_columns_it_writes_without_copying_them(tmp_path: Path) -> None:
    rows = 400_000
    pq.write_table(pa.table({"n": list(range(rows))}), tmp_path / "n.parquet")
    dataset = load_dataset("parquet", data_files=str(tmp_path / "n.parquet"), split="train")
    previous = pa.default_memory_pool()
    pool = pa.proxy_memory_pool(previous)  # what the map allocates, and only that
    pa.set_memory_pool(pool)
    try:
        out = dataset.map(lambda b: {"m": [n * 2 for n in b["n"]]}, batched=True, batch_size=1000)
    finally:
        pa.set_memory_pool(previous)
    recorded = out._shards[0].entries[0].metadata_item("column_fingerprints")  # pyright: ignore[reportPrivateUsage]
    assert recorded == {"m": arrow_digest(out.data.column("m"))}
    peak, written = pool.max_memory(), out.data.column("m").nbytes
    assert peak is not None
    # A copy of the written column would take `written` bytes on top of the output's
    # own (the old code peaked at twice it); the input is read a batch at a time too.
    assert peak < written, (peak, written)


class _CountingHash:
    """An xxh3 hasher that adds the bytes it is fed to ``fed``."""

    def __init__(self, real: Any, fed: list[int], data: Any = b"") -> None:
        self._hash, self._fed = real(), fed
        self.update(data)

    def update(self, data: Any) -> None:
        self._fed.append(memoryview(data).nbytes)
        self._hash.update(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._hash, name)


def _count_hashed_bytes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of what xxh3 is fed from now on (until ``monkeypatch.undo()``)."""
    fed: list[int] = []
    for name in ("xxh3_128", "xxh3_64"):
        real = getattr(xxhash, name)
        monkeypatch.setattr(
            xxhash, name, lambda data=b"", real=real: _CountingHash(real, fed, data)
        )
    for name in ("xxh3_128_digest", "xxh3_128_hexdigest", "xxh3_64_hexdigest", "xxh3_64_intdigest"):
        real = getattr(xxhash, name)
        monkeypatch.setattr(
            xxhash, name, lambda data, real=real, **kw: fed.append(len(data)) or real(data, **kw)
        )
    return fed


def _texts(tmp_path: Path, rows: int = 100_000) -> Dataset:
    """A loaded file of ``rows`` texts of 209 bytes (21 MB) and ints (its load hashed them)."""
    texts = [f"{row:08d} " + "x" * 200 for row in range(rows)]
    pq.write_table(pa.table({"text": texts, "n": list(range(rows))}), tmp_path / "t.parquet")
    return load_dataset("parquet", data_files=str(tmp_path / "t.parquet"), split="train")


def test_a_map_hashes_the_columns_it_writes_once_and_no_input_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = _texts(tmp_path)
    fed = _count_hashed_bytes(monkeypatch)
    out = dataset.map(lambda b: {"n2": [len(t) for t in b["text"]]}, batched=True)
    monkeypatch.undo()
    written = out.data.column("n2").nbytes  # 0.8 MB; the text it read is 21 MB
    assert out._shards[0].entries[0].metadata_item("column_reads") == ["text"]  # pyright: ignore[reportPrivateUsage]
    # The written column's bytes are hashed twice, each from the buffers in hand: as the
    # data file's checksum and as its column fingerprint; besides that only keys and code
    # (a few kB). The read column's fingerprint is the one its load recorded: its 21 MB
    # are not hashed again, nor is the written column fingerprinted a second time.
    assert 2 * written <= sum(fed) < 2 * written + 64_000, (sum(fed), written)


def test_a_column_a_map_passed_through_is_not_hashed_again_by_the_next_map(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _texts(tmp_path).map(lambda b: {"n2": [n * 2 for n in b["n"]]}, batched=True)
    fed = _count_hashed_bytes(monkeypatch)
    out = first.map(lambda b: {"n3": [len(t) for t in b["text"]]}, batched=True)
    monkeypatch.undo()
    written = out.data.column("n3").nbytes
    recorded = out._shards[0].entries[0].metadata_item("read_fingerprints")  # pyright: ignore[reportPrivateUsage]
    assert recorded == {"text": arrow_digest(out.data.column("text"))}
    # ``text`` (21 MB) passed through the first map: its output entry keeps it in its
    # base, the load's entry, whose recorded fingerprint it is (the old code hashed it).
    assert sum(fed) < 2 * written + 64_000, (sum(fed), written)

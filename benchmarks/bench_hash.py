"""Hashing speed: dagster_ds vs datasets.fingerprint.Hasher, in one process.

Run with ``make bench`` (or ``python benchmarks/bench_hash.py``). The ``raw``
column is a floor: xxh3-128 straight over the Arrow buffers, with no
canonicalisation at all. Times are the best of N runs, alternating.

Target (issue 14): the 1,000-chunk table at least 0.6 of raw (raw/ours).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _scratch import scratch_folder

os.environ.setdefault("HF_DATASETS_CACHE", str(scratch_folder("bench-anchor-")))

import pyarrow as pa
import xxhash
from _timing import fastest_of, report
from datasets.fingerprint import Hasher as AnchorHasher

from dagster_ds.fingerprint import Hasher

ROWS = 1_000_000


def _raw_buffer_hash(table: pa.Table) -> str:
    digest = xxhash.xxh3_128()
    for column in table.columns:
        for chunk in column.chunks:
            for buffer in chunk.buffers():
                if buffer is not None:
                    digest.update(memoryview(buffer))
    return digest.hexdigest()


def main() -> None:
    table = pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "text": pa.array([f"row number {i}" for i in range(ROWS)]),
        }
    )
    # 1,000 chunks with buffers of their own, as a table built batch by batch has.
    chunked = pa.Table.from_batches(
        [
            pa.record_batch(batch.to_pydict(), schema=table.schema)
            for batch in table.to_batches(ROWS // 1000)
        ]
    )
    assert chunked.column(0).num_chunks == 1000
    assert Hasher.hash(table) == Hasher.hash(chunked)

    vocabulary = {f"word{i}": i for i in range(100_000)}

    def lookup(example: dict[str, str]) -> dict[str, int]:
        return {"id": vocabulary.get(example["text"], -1)}

    seed = lambda example: {"length": len(example["text"])}  # noqa: E731

    cases = [
        ("1M-row table (1 chunk)", table, 5),
        ("1M-row table (1,000 chunks)", chunked, 5),
        ("lambda", seed, 50),
        ("function, 100k-entry dict closure", lookup, 5),
    ]
    rows = []
    for name, value, repeat in cases:
        times: dict[str, list[float]] = {"anchor": [], "ours": [], "raw": []}
        for _ in range(repeat):  # alternate, so machine noise hits all alike
            times["anchor"].append(fastest_of(lambda value=value: AnchorHasher.hash(value), 1))
            times["ours"].append(fastest_of(lambda value=value: Hasher.hash(value), 1))
            if isinstance(value, pa.Table):
                times["raw"].append(fastest_of(lambda value=value: _raw_buffer_hash(value), 1))
        raw = min(times["raw"]) if times["raw"] else None
        rows.append((name, min(times["anchor"]), min(times["ours"]), raw))
    size_mb = table.nbytes / 1e6
    report(f"Hasher.hash, best of runs ({size_mb:.0f} MB table)", rows)


if __name__ == "__main__":
    main()

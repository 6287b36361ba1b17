"""A pass over a 120 MB shard stored on S3, as its own process: the Python memory it takes.

``python -m tests.arrow._streamed_child ROOT WHAT`` maps a 120 MB shard into the
store ``ROOT`` (an ``s3://`` URL; the endpoint from ``$AWS_ENDPOINT_URL_S3``); then,
its rows not read since, either stores it as a version (``WHAT`` = ``store``: its
rows are hashed, read back from S3) or maps it again (``map``). Prints as JSON the
peak of Python's allocations during that second step, in bytes (`tracemalloc`:
what s3fs downloads is Python bytes), and the shard's size. Its own process, so
that the S3 server's memory is not counted.
"""

from __future__ import annotations

import gc
import json
import sys
import tracemalloc
from typing import Any

from dagster_ds import Dataset
from dagster_ds.arrow._stored import store_version
from dagster_ds.cache import CacheStore, cache_root

TEXT_BYTES = 1000
ROWS = 120_000


def add_length(batch: dict[str, list[Any]]) -> dict[str, list[int]]:
    return {"length": [len(text) for text in batch["text"]]}


def add_double(batch: dict[str, list[Any]]) -> dict[str, list[int]]:
    return {"double": [2 * n for n in batch["n"]]}


def main(root: str, what: str) -> None:
    source = Dataset.from_dict({"text": ["x" * TEXT_BYTES] * ROWS, "n": list(range(ROWS))})
    with cache_root(root):
        dataset = source.map(add_length, batched=True)
    del source
    gc.collect()
    tracemalloc.start()
    if what == "store":
        store_version(CacheStore(root), "7" * 32, dataset)
    else:
        with cache_root(root):
            mapped = dataset.map(add_double, batched=True)
        assert len(mapped) == ROWS
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(json.dumps({"peak": peak, "rows": ROWS * TEXT_BYTES}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""Storing a mapped shard on S3 as its own process: how much Python memory storing it takes.

``python -m tests.arrow._streamed_child ROOT`` maps an 80 MB shard into the store
``ROOT`` (an ``s3://`` URL; the endpoint from ``$AWS_ENDPOINT_URL_S3``), then stores
it as a version (which hashes its rows, read back from S3) and prints as JSON the
peak of Python's allocations while storing, in bytes (`tracemalloc`; what s3fs
downloads is Python bytes). Its own process, so that the S3 server's memory is not
counted.
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
ROWS = 80_000


def add_length(batch: dict[str, list[Any]]) -> dict[str, list[int]]:
    return {"length": [len(text) for text in batch["text"]]}


def main(root: str) -> None:
    source = Dataset.from_dict({"text": ["x" * TEXT_BYTES] * ROWS, "n": list(range(ROWS))})
    with cache_root(root):
        dataset = source.map(add_length, batched=True)
    del source
    gc.collect()
    tracemalloc.start()
    store_version(CacheStore(root), "7" * 32, dataset)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(json.dumps({"peak": peak, "rows": ROWS * TEXT_BYTES}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])

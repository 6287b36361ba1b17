"""Giving back, between shards, the memory a shard's rows took.

Arrow's allocators keep the memory freed by a shard's tables for the next
allocation (mimalloc purges it only after a delay, jemalloc after a decay), and
glibc keeps the free memory of Python's large objects (the bytes downloaded
from an object store) at the top of its heap. A driver going through shards
one at a time would then peak at the rows of one shard plus what the earlier
ones left behind. `release_unused` hands both back to the system once a shard
is done: a few milliseconds per shard. The allocator itself is left as
configured (``ARROW_DEFAULT_MEMORY_POOL``, ``MIMALLOC_*``).
"""

from __future__ import annotations

import pyarrow as pa


def release_unused() -> None:
    """Return the memory Arrow's pool and the C allocator hold free to the system.

    Example:
        >>> table = pa.table({"a": list(range(1000))})
        >>> del table
        >>> release_unused()
    """
    default = pa.default_memory_pool()
    default.release_unused()
    system = pa.system_memory_pool()  # malloc: also what Python's large objects use
    if system.backend_name != default.backend_name:
        system.release_unused()

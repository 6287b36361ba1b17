"""Streaming datasets: lazily evaluated, sharded, resumable pipelines on Arrow batches.

`IterableDataset` has the anchor's streaming API (``load_dataset(...,
streaming=True)``, `map`, `filter`, `shuffle`, `take`, `skip`, `shard`,
`interleave_datasets`, ...). Work is done on Arrow record batches; Python dicts are
made only for the examples a user iterates. `IterableDataset.state_dict` resumes
exactly, at any example, shuffle buffers included.

Deliberate differences from the anchor (each has a test in tests/streaming):
resumes are exact, shuffle buffers included; exports run in bounded memory;
`set_epoch` only reorders shuffled pipelines; the shuffle buffer follows the
documented replace-one-at-random algorithm (the anchor 5.x flushes half its buffer
at a time); per-example `map` outputs must share their keys (they become one Arrow
batch).

Example:
    >>> from dagster_ds.streaming import IterableDataset
    >>> ds = IterableDataset.from_dict({"a": list(range(10))}).shuffle(seed=0, buffer_size=4)
    >>> it = iter(ds)
    >>> first = [next(it) for _ in range(3)]
    >>> state = ds.state_dict()
    >>> rest = list(it)
    >>> ds.load_state_dict(state)
    >>> list(ds) == rest
    True
"""

# Internal (listed in __internal__): for the other dagster_ds packages only; not public API.
from dagster_ds.streaming._arrow import group_runs as group_runs
from dagster_ds.streaming._arrow import rows_differ as rows_differ
from dagster_ds.streaming._column import IterableColumn as IterableColumn
from dagster_ds.streaming._concat import HorizontalConcat as HorizontalConcat
from dagster_ds.streaming._concat import VerticalConcat as VerticalConcat
from dagster_ds.streaming._construct import stream_files as stream_files
from dagster_ds.streaming._construct import stream_table as stream_table
from dagster_ds.streaming._dataset import IterableDataset as IterableDataset
from dagster_ds.streaming._dict import IterableDatasetDict as IterableDatasetDict
from dagster_ds.streaming._interleave import STRATEGIES as STRATEGIES
from dagster_ds.streaming._interleave import InterleaveNode as InterleaveNode
from dagster_ds.streaming._rng import SourceDraws as SourceDraws
from dagster_ds.streaming._rng import random_seed as random_seed

__all__ = ["IterableColumn", "IterableDataset", "IterableDatasetDict"]

#: Names other dagster_ds packages import from here; not public API (may change).
__internal__ = [
    "HorizontalConcat",
    "InterleaveNode",
    "STRATEGIES",
    "SourceDraws",
    "VerticalConcat",
    "group_runs",
    "random_seed",
    "rows_differ",
    "stream_files",
    "stream_table",
]

"""Where row-local work runs: in this process, forked workers, or an executor elsewhere.

The seam that map, filter, streaming exports, pushes and the Dask executor
share. A `ShardExecutor` computes the pieces of one transform that the store
lacks, given a `Work` that knows how to compute and name one piece (the
pieces are opaque here); `LocalProcesses` (forked workers, `num_proc`) is the
default, and ``with executor:`` makes another current for a block. Work that
is not cached (the files of a sharded export or push) goes to an executor as
`Sealed` calls (`ShardExecutor.run_calls`).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any, Protocol, Self, TypeVar

import dill  # pyright: ignore[reportMissingTypeStubs]

from dagster_ds.cache import CacheStore
from dagster_ds.parallel._forked import in_processes

Item = TypeVar("Item")
Result = TypeVar("Result")


class Work(Protocol):
    """How to compute any missing piece of one transform: what an executor runs or ships."""

    def compute(
        self, piece: Any, store: CacheStore | None = None, *, rows_done: list[int] | None = None
    ) -> bool:
        """Write ``piece``'s output into ``store`` unless there; whether it ran here."""
        ...

    def describe(self, piece: Any) -> str:
        """``piece`` in words, for errors (``shard 5f0c... (rows from 200)``)."""
        ...


@dataclass
class ShardCounts:
    """How many output shards a run found in the store and how many it computed.

    Attributes:
        cached: Shards already in the store (not computed).
        computed: Shards computed by this run.
        elsewhere: Shards another process (a second driver) finished while this
            run waited for them: neither found nor computed here.
    """

    cached: int = 0
    computed: int = 0
    elsewhere: int = 0

    def add(self, other: ShardCounts) -> None:
        self.cached += other.cached
        self.computed += other.computed
        self.elsewhere += other.elsewhere

    @property
    def total(self) -> int:
        return self.cached + self.computed + self.elsewhere


class ShardExecutor(abc.ABC):
    """Where a transform's missing output pieces are computed.

    Subclasses compute every piece of ``missing`` into ``store`` (which they
    may reach by URL from other machines) and return the counts; they raise
    if any piece failed, and nothing is published by the caller then.
    """

    #: Whether the executor runs the work whatever ``num_proc`` is (a cluster).
    remote: bool = False
    _default_tokens: list[Token[ShardExecutor | None]]

    @abc.abstractmethod
    def compute(
        self, work: Work, missing: Sequence[Any], store: CacheStore, workers: int
    ) -> ShardCounts:
        """Compute the ``missing`` pieces of ``work`` into ``store``."""

    def record(self, counts: ShardCounts) -> None:
        """Told the counts of each transform it served (found and computed)."""
        del counts

    def check_reach(self, what: str, path: str) -> None:
        """Warn when the local ``path`` (the ``what``) is out of this executor's workers' reach."""
        del what, path

    def run_calls(
        self,
        function: Callable[[Item], Result],
        items: Sequence[Item],
        *,
        what: Callable[[Item], str],
        on_done: Callable[[Result], object] | None = None,
    ) -> list[Result]:
        """``function`` over ``items`` where this executor runs work; results in order.

        What exports and pushes hand over, one call per output file (or group of
        files): ``function`` is importable and the items pickle. This base runs
        them here, one after the other; ``on_done`` is told each result as it
        comes. ``what(item)`` names an item in errors.
        """
        del what
        results: list[Result] = []
        for item in items:
            results.append(function(item))
            if on_done is not None:
                on_done(results[-1])
        return results

    def __enter__(self) -> Self:
        """Make this the executor of every transform in the block (this context)."""
        self._tokens().append(_EXECUTOR.set(self))
        return self

    def __exit__(self, *_exc: object) -> None:
        _EXECUTOR.reset(self._tokens().pop())

    def _tokens(self) -> list[Token[ShardExecutor | None]]:
        tokens: list[Token[ShardExecutor | None]] | None = getattr(self, "_default_tokens", None)
        if tokens is None:
            tokens = []
            self._default_tokens = tokens
        return tokens

    @property
    def active(self) -> bool:
        """Whether a ``with`` block of this executor is open."""
        return bool(self._tokens())


class LocalProcesses(ShardExecutor):
    """Forked processes of this machine (``num_proc``): the default executor."""

    def compute(
        self, work: Work, missing: Sequence[Any], store: CacheStore, workers: int
    ) -> ShardCounts:
        counts = ShardCounts()
        computed = in_processes(
            work.compute, missing, min(workers, len(missing)) or 1, what=work.describe
        )
        for ran in computed:
            counts.computed += ran
            counts.elsewhere += not ran
        return counts


@dataclass(frozen=True)
class Sealed:
    """One call as dill bytes (the function by reference, its argument by value), labelled.

    Its repr shows only the label: what it carries (a Hub token, storage
    options) never appears in a scheduler's or worker's log.
    """

    label: str
    data: bytes = field(repr=False)

    @classmethod
    def of(cls, label: str, function: Callable[[Any], Any], argument: Any) -> Sealed:
        data: bytes = dill.dumps((function, argument), recurse=True)  # pyright: ignore[reportUnknownMemberType]
        return cls(label, data)

    def __call__(self) -> Any:
        function, argument = dill.loads(self.data)  # pyright: ignore[reportUnknownMemberType]
        return function(argument)


def run_sealed(sealed: Sealed) -> Any:
    """Run a `Sealed` call (what `ShardExecutor.run_calls` gets for exports and pushes)."""
    return sealed()


_EXECUTOR: ContextVar[ShardExecutor | None] = ContextVar("dagster_ds_executor", default=None)
_COUNTERS: ContextVar[tuple[ShardCounts, ...]] = ContextVar("dagster_ds_counters", default=())


def current_executor() -> ShardExecutor | None:
    """The executor of the innermost ``with executor:`` block, if any."""
    return _EXECUTOR.get()


def remote_executor() -> ShardExecutor | None:
    """The current executor if it runs work elsewhere (a cluster), else None."""
    chosen = _EXECUTOR.get()
    return chosen if chosen is not None and chosen.remote else None


@contextmanager
def counting_shards() -> Generator[ShardCounts]:
    """Count, over the block, the output shards found and computed by executors."""
    counts = ShardCounts()
    token = _COUNTERS.set((*_COUNTERS.get(), counts))
    try:
        yield counts
    finally:
        _COUNTERS.reset(token)


def record_counts(counts: ShardCounts) -> None:
    """Add ``counts`` to every `counting_shards` block open in this context."""
    for counter in _COUNTERS.get():
        counter.add(counts)

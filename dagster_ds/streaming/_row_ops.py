"""The row operators of IterableDataset: map, filter, batch, shuffle, take, skip, shard."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dagster_ds.errors import InvalidArgumentError
from dagster_ds.features import Features, List
from dagster_ds.fingerprint import filter_column_sources, map_column_sources
from dagster_ds.formatting import FunctionCall
from dagster_ds.streaming._base import StreamBase
from dagster_ds.streaming._batch import BatchNode, RunBatchNode
from dagster_ds.streaming._columns import check_columns
from dagster_ds.streaming._filter import FilterNode
from dagster_ds.streaming._limit import SkipNode, TakeNode
from dagster_ds.streaming._map import MapNode
from dagster_ds.streaming._rng import derive_seed, random_seed
from dagster_ds.streaming._shuffle import BufferShuffleNode

if TYPE_CHECKING:
    from dagster_ds.streaming._dataset import IterableDataset


def names_of(columns: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """Column names as a tuple (a single name allowed), or None."""
    if columns is None:
        return None
    return (columns,) if isinstance(columns, str) else tuple(columns)


class RowOperators(StreamBase):
    """Operators that change which rows come out, or in which order."""

    def _check_known_columns(self, names: Sequence[str], operation: str) -> None:
        known = self.column_names
        if known is not None:
            check_columns(names, known, operation)

    def map(
        self,
        function: Callable[..., Any] | None = None,
        with_indices: bool = False,
        input_columns: str | Sequence[str] | None = None,
        batched: bool = False,
        batch_size: int | None = 1000,
        drop_last_batch: bool = False,
        remove_columns: str | Sequence[str] | None = None,
        features: Features | None = None,
        fn_kwargs: Mapping[str, Any] | None = None,
    ) -> IterableDataset:
        """Apply ``function`` to every example (or batch) as the stream is read.

        The function gets an example as a dict (a batch as a dict of lists when
        ``batched``; numpy arrays, an Arrow table or a DataFrame after `with_format`)
        and returns a dict of columns that updates it, or None for no update.
        ``remove_columns`` are dropped before the output is merged, so the function
        still sees them and may return columns of those names. A batched function
        may return more or fewer rows than it got, once the input columns it does
        not return are removed. A per-example function must return the same keys
        for every example (the outputs become one Arrow batch; the anchor would yield
        ragged examples). Batches hold exactly ``batch_size`` examples (the
        last one may hold fewer; ``batch_size=None`` or ``<= 0`` means one batch of
        everything) whatever the files' own batches. The features become unknown
        (None) unless ``features`` gives them, as in the anchor.

        Args:
            function: ``f(example[, index])`` or ``f(batch[, indices])``; None keeps the rows.
            with_indices: Also pass the example's position (in this stream) or positions.
            input_columns: Pass these columns as positional arguments instead of the dict.
            batched: Pass batches of ``batch_size`` examples.
            batch_size: Examples per batch when ``batched``.
            drop_last_batch: Drop a last batch smaller than ``batch_size``.
            remove_columns: Columns to drop from the output.
            features: The output's features (cast to them).
            fn_kwargs: Keyword arguments for ``function``.

        Returns:
            A new dataset; nothing runs until it is iterated.

        Example:
            >>> ds = IterableDataset.from_dict({"text": ["a", "bb"]})
            >>> list(ds.map(lambda x: {"n": len(x["text"])}, remove_columns="text"))
            [{'n': 1}, {'n': 2}]
        """
        inputs, removed = names_of(input_columns), names_of(remove_columns) or ()
        self._check_known_columns(inputs or (), "map(input_columns=...)")
        self._check_known_columns(removed, "map(remove_columns=...)")
        call = None
        if function is not None:
            call = FunctionCall(
                function, inputs, with_indices, dict(fn_kwargs or {}), self._formatter
            )
        node = MapNode(
            self._node,
            call=call,
            batched=batched,
            batch_size=batch_size,
            drop_last_batch=drop_last_batch,
            remove_columns=removed,
            features=features,
        )
        args = {
            "function": function,
            "with_indices": with_indices,
            "input_columns": inputs,
            "batched": batched,
            "batch_size": batch_size if batched else None,
            "drop_last_batch": drop_last_batch if batched else None,
            "remove_columns": removed,
            "features": features.to_dict() if features is not None else None,
            "fn_kwargs": dict(fn_kwargs or {}),
            "format": self._formatter.type,
        }
        parent = self

        def sources() -> dict[str, tuple[str, ...]] | None:
            # The outputs known by features=, else by a complete pass; what it read there.
            names = parent.column_names
            outputs = list(features) if features is not None else node.observed.columns
            if outputs is None or names is None:
                return None
            return map_column_sources(names, outputs, node.observed.reads_or(inputs), removed)

        return self._derive(node, "map", args, features=features, columns=sources)

    def filter(
        self,
        function: Callable[..., Any] | None = None,
        with_indices: bool = False,
        input_columns: str | Sequence[str] | None = None,
        batched: bool = False,
        batch_size: int | None = 1000,
        fn_kwargs: Mapping[str, Any] | None = None,
    ) -> IterableDataset:
        """Keep the examples for which ``function`` returns True, as the stream is read.

        Args:
            function: ``f(example[, index]) -> bool`` or, batched,
                ``f(batch[, indices]) -> list[bool]``; None keeps every example.
            with_indices: Also pass the example's position in this stream.
            input_columns: Pass these columns as positional arguments instead of the dict.
            batched: Pass batches of ``batch_size`` examples.
            batch_size: Examples per batch when ``batched``.
            fn_kwargs: Keyword arguments for ``function``.

        Returns:
            A new dataset.

        Example:
            >>> ds = IterableDataset.from_dict({"a": [1, 2, 3, 4]})
            >>> [x["a"] for x in ds.filter(lambda x, i: i % 2 == 0, with_indices=True)]
            [1, 3]
        """
        inputs = names_of(input_columns)
        self._check_known_columns(inputs or (), "filter(input_columns=...)")
        call = None
        if function is not None:
            call = FunctionCall(
                function, inputs, with_indices, dict(fn_kwargs or {}), self._formatter
            )
        node = FilterNode(self._node, call=call, batched=batched, batch_size=batch_size)
        args = {
            "function": function,
            "with_indices": with_indices,
            "input_columns": inputs,
            "batched": batched,
            "batch_size": batch_size if batched else None,
            "fn_kwargs": dict(fn_kwargs or {}),
            "format": self._formatter.type,
        }
        parent = self

        def sources() -> dict[str, tuple[str, ...]] | None:  # what it read in a complete pass
            names = parent.column_names
            reads = node.observed.reads_or(inputs)
            return filter_column_sources(names, reads) if names is not None else None

        return self._derive(node, "filter", args, columns=sources)

    def batch(
        self,
        batch_size: int | None = None,
        by_column: str | Sequence[str] | None = None,
        drop_last_batch: bool = False,
    ) -> IterableDataset:
        """Group ``batch_size`` consecutive examples into one example of lists.

        With ``by_column``, each run of consecutive examples with the same values in
        those columns becomes one example, whatever its length (as the anchor).

        Example:
            >>> ds = IterableDataset.from_dict({"a": [1, 2, 3]})
            >>> list(ds.batch(2))
            [{'a': [1, 2]}, {'a': [3]}]
            >>> list(IterableDataset.from_dict({"k": [1, 1, 2]}).batch(by_column="k"))
            [{'k': [1, 1]}, {'k': [2]}]
        """
        if by_column is not None:
            return self._batch_runs(
                (by_column,) if isinstance(by_column, str) else tuple(by_column)
            )
        if batch_size is None:
            raise InvalidArgumentError(
                "batch: pass batch_size (examples per batch) or by_column (columns whose "
                "runs of equal values make a batch)."
            )
        if batch_size < 1:
            raise InvalidArgumentError(
                f"batch: batch_size must be a positive number of examples, got {batch_size!r}."
            )
        features = self.features
        grouped = (
            Features({name: List(feature) for name, feature in features.items()})
            if features is not None
            else None
        )
        node = BatchNode(self._node, batch_size=batch_size, drop_last_batch=drop_last_batch)
        args = {"batch_size": batch_size, "drop_last_batch": drop_last_batch}
        return self._derive(node, "batch", args, features=grouped)

    def _batch_runs(self, by_column: tuple[str, ...]) -> IterableDataset:
        self._check_known_columns(by_column, "batch(by_column=...)")
        features = self.features
        grouped = (
            Features({name: List(feature) for name, feature in features.items()})
            if features is not None
            else None
        )
        node = RunBatchNode(self._node, by_column=by_column)
        names = list(features) if features is not None else None

        def sources() -> dict[str, tuple[str, ...]] | None:  # runs are cut by ``by_column``
            return filter_column_sources(names, by_column) if names is not None else None

        args = {"by_column": list(by_column)}
        return self._derive(node, "batch", args, features=grouped, columns=sources)

    def shuffle(
        self, seed: int | None = None, generator: Any = None, buffer_size: int = 1000
    ) -> IterableDataset:
        """Shuffle the shards' order and the examples through a buffer of ``buffer_size``.

        The buffer is filled with the first ``buffer_size`` examples; then each new
        example replaces a randomly chosen buffered one, which is yielded; at the end
        the buffer is yielded in random order. A bigger buffer shuffles better. After
        `take` or `skip` the shards keep their order. `set_epoch` gives each epoch
        its own order (seeds derived from ``seed`` and the epoch), reproducibly.
        Unlike the anchor, `state_dict` keeps the buffer's rows, so a resume yields
        exactly what the uninterrupted run would have; and the buffer follows the
        documented algorithm above (the anchor 5.x shuffles its full buffer and
        yields half of it at a time, which a per-row resume could not reproduce).

        Args:
            seed: Seed of the shard order and of the buffer (random when None).
            generator: A numpy Generator to draw the seed from instead (it is copied,
                not advanced).
            buffer_size: Examples held in the buffer.

        Returns:
            A new dataset.

        Example:
            >>> ds = IterableDataset.from_dict({"a": list(range(5))})
            >>> sorted(x["a"] for x in ds.shuffle(seed=42, buffer_size=5))
            [0, 1, 2, 3, 4]
        """
        if buffer_size < 1:
            raise InvalidArgumentError(
                f"shuffle: buffer_size must be at least 1, got {buffer_size!r}."
            )
        if seed is None:
            seed = (
                int(copy.deepcopy(generator).integers(0, 1 << 63))
                if generator is not None
                else random_seed()
            )
        child = self._node
        if not child.shard_order_fixed:
            child = child.shuffle_shards(derive_seed(seed, "shards"))
        node = BufferShuffleNode(child, buffer_size=buffer_size, seed=derive_seed(seed, "buffer"))
        return self._derive(node, "shuffle", {"seed": seed, "buffer_size": buffer_size})

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch: shuffled datasets then use seeds derived from their seed and it.

        Without `shuffle` in the pipeline the order does not depend on the epoch
        (the anchor 5.x also reorders the shards of unshuffled datasets).

        Example:
            >>> ds = IterableDataset.from_dict({"a": list(range(4))}).shuffle(seed=0)
            >>> ds.set_epoch(1)
            >>> ds.epoch
            1
        """
        if epoch < 0:
            raise InvalidArgumentError(f"set_epoch: epoch must be 0 or more, got {epoch!r}.")
        self._epoch = epoch

    @property
    def epoch(self) -> int:
        """The epoch `set_epoch` set (0 at first)."""
        return self._epoch

    def take(self, n: int) -> IterableDataset:
        """The first ``n`` examples; the shard order is then fixed (shuffle keeps it).

        Example:
            >>> list(IterableDataset.from_dict({"a": [1, 2, 3]}).take(2))
            [{'a': 1}, {'a': 2}]
        """
        _check_count(n, "take")
        return self._derive(TakeNode(self._node, n), "take", {"n": n})

    def skip(self, n: int) -> IterableDataset:
        """Every example after the first ``n``; the shard order is then fixed.

        Example:
            >>> list(IterableDataset.from_dict({"a": [1, 2, 3]}).skip(2))
            [{'a': 3}]
        """
        _check_count(n, "skip")
        return self._derive(SkipNode(self._node, n), "skip", {"n": n})

    def shard(self, num_shards: int, index: int, contiguous: bool = True) -> IterableDataset:
        """The ``index``-th of ``num_shards`` groups of this dataset's shards.

        ``contiguous`` groups consecutive shards (concatenating the groups in order
        gives the dataset back); otherwise group ``i`` holds the shards whose
        position is ``i`` modulo ``num_shards``. A group may be empty when there are
        fewer shards than groups; `take` and `skip` split their count among groups.

        Example:
            >>> ds = IterableDataset.from_dict({"a": [0, 1, 2, 3]}, num_shards=4)
            >>> list(ds.shard(num_shards=2, index=1))
            [{'a': 2}, {'a': 3}]
        """
        if num_shards < 1 or not 0 <= index < num_shards:
            raise InvalidArgumentError(
                f"shard: need num_shards >= 1 and 0 <= index < num_shards, got "
                f"num_shards={num_shards!r}, index={index!r}."
            )
        node = self._node.shard(num_shards, index, contiguous)
        args = {"num_shards": num_shards, "index": index, "contiguous": contiguous}
        return self._derive(node, "shard", args)

    def reshard(self) -> IterableDataset:
        """Split the shards further where the sources allow: Parquet files per row group.

        Example:
            >>> import tempfile, pyarrow as pa, pyarrow.parquet as pq
            >>> path = tempfile.mkdtemp() + "/t.parquet"
            >>> pq.write_table(pa.table({"a": list(range(100))}), path, row_group_size=25)
            >>> ds = load_dataset("parquet", data_files=path, split="train", streaming=True)
            >>> ds.num_shards, ds.reshard().num_shards
            (1, 4)
        """
        return self._derive(self._node.reshard(), "reshard", {})


def _check_count(n: int, operation: str) -> None:
    if n < 0:
        raise InvalidArgumentError(f"{operation}: n must be 0 or more, got {n!r}.")

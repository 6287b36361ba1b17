"""IterableDataset: a lazily evaluated stream of examples, resumable at any example."""

from __future__ import annotations

import itertools
import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

import pyarrow as pa

from dagster_ds.errors import InvalidArgumentError
from dagster_ds.features import Features
from dagster_ds.fingerprint import generate_random_fingerprint, update_fingerprint
from dagster_ds.formatting import Formatter, columns_of_rows, table_of_columns, typed_table
from dagster_ds.streaming._column_ops import ColumnOperators
from dagster_ds.streaming._columns import check_columns
from dagster_ds.streaming._cursor import Cursor, start_position
from dagster_ds.streaming._iteration import (
    Progress,
    check_pipeline,
    check_state,
    make_state,
    start_of,
    torch_worker,
)
from dagster_ds.streaming._node import Node, arrow_of
from dagster_ds.streaming._row_ops import RowOperators
from dagster_ds.streaming._shards import GeneratorShard, split_gen_kwargs
from dagster_ds.streaming._source import ShardSource

if TYPE_CHECKING:
    import pandas as pd  # pyright: ignore[reportMissingTypeStubs]

    from dagster_ds.hub import PushResult
    from dagster_ds.streaming._column import IterableColumn

_ROOT = "0" * 32
_log = logging.getLogger(__name__)


class IterableDataset(RowOperators, ColumnOperators):
    """A stream of examples read lazily from files, a generator or a dataset, in shards.

    Operators (`map`, `filter`, `shuffle`, `take`, ...) build a pipeline that runs
    only when the dataset is iterated, on Arrow record batches; Python dicts are made
    only for the examples handed out. `state_dict` records where an iteration stands,
    down to the example (shuffle buffers included), and `load_state_dict` resumes
    there exactly. With torch installed, the dataset works with
    ``DataLoader(num_workers=N)``: each worker reads its own shards.

    Example:
        >>> ds = IterableDataset.from_dict({"text": ["a", "bb", "ccc"]}, num_shards=3)
        >>> ds = ds.filter(lambda x: len(x["text"]) > 1).map(lambda x: {"n": len(x["text"])})
        >>> list(ds)
        [{'text': 'bb', 'n': 2}, {'text': 'ccc', 'n': 3}]
    """

    def __init__(
        self,
        node: Node,
        *,
        features: Features | None = None,
        formatter: Formatter | None = None,
        split: str | None = None,
        fingerprint: str | Callable[[], str] | None = None,
    ) -> None:
        """Wrap a pipeline; build datasets with `load_dataset` or the ``from_*`` methods.

        Without ``fingerprint``, a random one is drawn: nothing is known about the
        nodes' data, so the result must never match a cached one.
        """
        if fingerprint is None or isinstance(fingerprint, str):
            fixed = fingerprint or generate_random_fingerprint()

            def of() -> str:
                return fixed

            fingerprint = of
        self._setup(
            node,
            features=features,
            formatter=formatter or Formatter(),
            split=split,
            fingerprint=fingerprint,
        )
        _add_torch_base(type(self))

    # -- construction ------------------------------------------------------

    @classmethod
    def from_generator(
        cls,
        generator: Callable[..., Iterable[Mapping[str, Any]]],
        features: Features | None = None,
        gen_kwargs: Mapping[str, Any] | None = None,
        split: str | None = None,
    ) -> IterableDataset:
        """A stream of the examples a generator function yields.

        List values in ``gen_kwargs`` are the shards: the generator is called once per
        element with a one-element list (all list values must have the same length),
        so shards can be shuffled and split between data loader workers. Resuming
        calls the generator again and skips the examples already read, so it must
        yield the same examples each time.

        Example:
            >>> def rows(shards):
            ...     for shard in shards:
            ...         yield from ({"shard": shard, "i": i} for i in range(2))
            >>> ds = IterableDataset.from_generator(rows, gen_kwargs={"shards": [0, 1, 2]})
            >>> ds.num_shards, len(list(ds))
            (3, 6)
        """
        kwargs = dict(gen_kwargs or {})
        shards = tuple(
            GeneratorShard(generator, shard_kwargs, features)
            for shard_kwargs in split_gen_kwargs(kwargs)
        )
        node = ShardSource(shards, features.arrow_schema if features is not None else None)
        args = {
            "generator": generator,
            "gen_kwargs": kwargs,
            "features": features.to_dict() if features is not None else None,
        }
        return cls(
            node,
            features=features,
            split=split,
            fingerprint=lambda: update_fingerprint(_ROOT, "from_generator", args),
        )

    @classmethod
    def from_dict(
        cls,
        mapping: Mapping[str, Sequence[Any]],
        features: Features | None = None,
        split: str | None = None,
        num_shards: int = 1,
    ) -> IterableDataset:
        """A stream of an in-memory dict of columns, in ``num_shards`` contiguous shards.

        Example:
            >>> list(IterableDataset.from_dict({"a": [1, 2]}))
            [{'a': 1}, {'a': 2}]
        """
        from dagster_ds.streaming._construct import stream_table

        table, features = table_of_columns(mapping, features)
        table, features, content = typed_table(table, features)
        fingerprint = update_fingerprint(content, "to_iterable_dataset", {"num_shards": num_shards})
        return stream_table(
            table,
            None,
            features=features,
            num_shards=num_shards,
            split=split,
            fingerprint=fingerprint,
            format_type=None,
        )

    @classmethod
    def from_list(
        cls,
        mapping: Sequence[Mapping[str, Any]],
        features: Features | None = None,
        split: str | None = None,
        num_shards: int = 1,
    ) -> IterableDataset:
        """A stream of an in-memory list of rows, in ``num_shards`` contiguous shards.

        Example:
            >>> list(IterableDataset.from_list([{"a": 1}, {"a": 2}]).take(1))
            [{'a': 1}]
        """
        return cls.from_dict(columns_of_rows(mapping), features, split, num_shards)

    # -- properties --------------------------------------------------------

    @property
    def split(self) -> str | None:
        """The split name, if any."""
        return self._split

    @property
    def num_shards(self) -> int:
        """How many shards the stream has (the most data loader workers that get data).

        Example:
            >>> IterableDataset.from_dict({"a": [1, 2, 3]}, num_shards=3).num_shards
            3
        """
        return self._node.num_shards

    @property
    def n_shards(self) -> int:
        """Same as `num_shards` (the anchor's older name)."""
        return self.num_shards

    def __repr__(self) -> str:
        names = self.column_names
        shown = names if names is not None else "Unknown"
        return f"IterableDataset({{\n    features: {shown},\n    num_shards: {self.num_shards}\n}})"

    def __getitem__(self, column_name: str) -> IterableColumn:
        """The values of one column, as a stream: ``for text in ds["text"]: ...``.

        Example:
            >>> list(IterableDataset.from_dict({"a": [1, 2]})["a"])
            [1, 2]
        """
        from dagster_ds.streaming._column import IterableColumn

        if not isinstance(column_name, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidArgumentError(
                f"An IterableDataset is indexed by column name only, got {column_name!r}; "
                "use take(n)/skip(n) for rows."
            )
        known = self.column_names
        if known is not None:
            check_columns([column_name], known, "__getitem__")
        return IterableColumn(self, column_name)

    # -- iteration ---------------------------------------------------------

    def _prepared(self, worker: tuple[int, int] | None, epoch: int | None = None) -> Node:
        """The pipeline as iterated in ``epoch`` by ``worker`` (``(id, count)``) or the process."""
        node = self._node
        epoch = self._epoch if epoch is None else epoch
        if epoch:
            node = node.for_epoch(epoch)
        if worker is not None:
            index, count = worker
            if node.num_shards < count and index == 0:
                _log.warning(
                    "Too many data loader workers: %d for %d shard(s); %d will stay idle. "
                    "Use fewer workers, more files, or reshard().",
                    count,
                    node.num_shards,
                    count - node.num_shards,
                )
            node = node.shard(count, index, contiguous=False).for_worker(index)
        return node

    def _start(self, rows: bool = False) -> Progress:
        """A new iteration; with ``rows``, read for per-example use (see `Cursor`)."""
        worker = torch_worker()
        node = self._prepared(worker)
        pipeline = node.describe()
        position = start_position()
        if worker is None and self._starting_state is not None:
            if self._starting_state["epoch"] == self._epoch:
                check_pipeline(self._starting_state, pipeline)
            position = start_of(self._starting_state, self._epoch)
        progress = Progress(Cursor(node, position, rows=rows), pipeline, self._epoch)
        self._live = progress
        return progress

    def __iter__(self) -> Iterator[Any]:
        # Not a generator itself: the iteration (and state_dict's view of it) starts now.
        # Examples are handed out by `chain` (no Python frame per example).
        return itertools.chain.from_iterable(self._examples(self._start(rows=True)))

    def _examples(self, progress: Progress) -> Iterator[Iterator[Any]]:
        """An iterator over each batch's examples, told to ``progress`` as it is handed out."""
        cursor = progress.cursor
        formatter = self._formatter
        plain = formatter.is_plain
        while True:
            before = cursor.position()
            batch, made = cursor.take_rows()
            if batch is None:
                return
            rows = made if made is not None and plain else formatter.rows(arrow_of(batch))
            iterator = iter(rows)
            progress.handing_out(before, iterator, len(rows))
            yield iterator

    def iter(self, batch_size: int, drop_last_batch: bool = False) -> Iterator[Any]:
        """Iterate over batches of ``batch_size`` examples in the dataset's format.

        A batch is a dict of lists (Python), a dict of arrays (numpy, torch), an Arrow
        table or a DataFrame; every batch but the last holds ``batch_size`` examples.

        Example:
            >>> ds = IterableDataset.from_dict({"a": [1, 2, 3]})
            >>> list(ds.iter(batch_size=2))
            [{'a': [1, 2]}, {'a': [3]}]
        """
        if batch_size < 1:
            raise InvalidArgumentError(
                f"iter: batch_size must be a positive number of examples, got {batch_size!r}."
            )
        return self._batches(self._start(), batch_size, drop_last_batch)

    def _batches(self, progress: Progress, batch_size: int, drop_last_batch: bool) -> Iterator[Any]:
        cursor = progress.cursor
        while (rows := cursor.read(batch_size)) is not None:
            if drop_last_batch and rows.num_rows < batch_size:
                return
            progress.batch_done()
            yield self._formatter.batch(rows)

    def _record_batches(self) -> Iterator[pa.RecordBatch]:
        """The stream's Arrow record batches as they come (their sizes vary)."""
        progress = self._start()
        cursor = progress.cursor
        while (batch := cursor.take()) is not None:
            progress.batch_done()
            yield batch

    # -- state -------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Where the latest iteration stands, as plain JSON data (``json.dumps`` works).

        Resuming from it with `load_state_dict` yields exactly the examples that
        would have come next, for every operator (shuffle buffers included: their
        rows are in the state, as base64 Arrow IPC), even mid-batch. The state
        applies to the epoch it was saved in.

        Example:
            >>> ds = IterableDataset.from_dict({"a": [0, 1, 2, 3]})
            >>> it = iter(ds)
            >>> next(it), next(it)
            ({'a': 0}, {'a': 1})
            >>> state = ds.state_dict()
            >>> ds.load_state_dict(state)
            >>> list(ds)
            [{'a': 2}, {'a': 3}]
        """
        if self._live is not None:
            return self._live.state_dict()
        if self._starting_state is not None:
            return dict(self._starting_state)
        return make_state(self._epoch, self._prepared(None).describe(), start_position())

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Resume the next iterations (of the state's epoch) where `state_dict` was taken.

        Iterations in another epoch start from the beginning, as in the anchor. Inside
        torch ``DataLoader`` workers (each of which reads other shards) the state is
        not used.

        Raises:
            InvalidStateError: The state is malformed or comes from another pipeline.

        Example:
            >>> import json
            >>> ds = IterableDataset.from_dict({"a": [0, 1, 2]})
            >>> iterator = iter(ds)
            >>> next(iterator)
            {'a': 0}
            >>> saved = json.dumps(ds.state_dict())
            >>> ds.load_state_dict(json.loads(saved))
            >>> list(ds)
            [{'a': 1}, {'a': 2}]
        """
        state = check_state(state_dict)
        check_pipeline(state, self._prepared(None, state["epoch"]).describe())
        self._starting_state = state
        self._live = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_live"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        _add_torch_base(type(self))

    # -- the Hub -------------------------------------------------------------

    def push_to_hub(
        self,
        repo_id: str,
        config_name: str = "default",
        set_default: bool | None = None,
        split: str | None = None,
        data_dir: str | None = None,
        commit_message: str | None = None,
        commit_description: str | None = None,
        private: bool | None = None,
        token: str | None = None,
        revision: str | None = None,
        create_pr: bool | None = False,
        max_shard_size: int | str | None = None,
        num_shards: int | None = None,
        embed_external_files: bool = True,
        num_proc: int | None = None,
        *,
        endpoint: str | None = None,
    ) -> PushResult:
        """Stream the dataset to a Hub repository as Parquet shards, in ONE commit.

        As `Dataset.push_to_hub` (layout, card with lineage, skip when the card
        already records this fingerprint, atomic commit), reading the stream once
        in bounded memory. By default a Parquet file per shard of the stream,
        named by the content hash of the bytes written
        (``<data_dir>/<split>-<rank>-<key>.parquet``, sorted in row order): a
        file the split already has on the Hub is not uploaded again, so
        appending a source file uploads one file. ``num_shards`` cuts the anchor's
        way instead (``<split>-XXXXX-of-YYYYY-<key>.parquet``); more output
        shards than the dataset has are filled round robin (an output shard may
        hold 0 rows); ``max_shard_size`` reads the stream once more to measure
        it. ``num_proc`` writes shards in that many processes, each reading
        whole source shards.

        Example:
            >>> from dagster_ds.testing import LocalHubServer
            >>> ds = IterableDataset.from_dict({"a": list(range(10))}, num_shards=1)
            >>> with LocalHubServer() as hub:
            ...     result = ds.push_to_hub("user/demo", num_shards=12, endpoint=hub.endpoint)
            >>> len(result.files), result.num_rows["train"]
            (12, 10)
        """
        from dagster_ds.hub import PushTarget, push_iterable

        del embed_external_files
        target = PushTarget(
            repo_id=repo_id,
            config_name=config_name,
            set_default=set_default,
            data_dir=data_dir,
            commit_message=commit_message,
            commit_description=commit_description,
            private=private,
            token=token,
            revision=revision,
            create_pr=create_pr,
            endpoint=endpoint,
        )
        return push_iterable(self, target, split, max_shard_size, num_shards, num_proc)

    # -- exports -----------------------------------------------------------

    def to_parquet(
        self,
        path_or_buf: str | os.PathLike[str] | BinaryIO,
        batch_size: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        num_shards: int | None = None,
        **parquet_writer_kwargs: Any,
    ) -> int:
        """Write the stream to Parquet, batch by batch: memory stays bounded by a row group.

        Unlike the anchor (which loads everything first), any stream can be exported:
        a row group is written once 4 MiB of rows are pending (``max_row_group_bytes``
        and ``row_group_size`` change that).
        With ``num_shards``, one file per contiguous group of shards (one per shard
        with ``num_shards=ds.num_shards``), named by formatting ``path_or_buf`` with
        ``index`` and ``num_shards``. The write is
        atomic: a failed export leaves no file.

        Args:
            path_or_buf: Target path or fsspec URL, or a file object opened in binary mode.
            batch_size: Rows read at a time (default: the stream's own batches).
            storage_options: Passed to the fsspec filesystem.
            num_shards: Write this many files instead of one.
            **parquet_writer_kwargs: `ParquetWriter` options (``row_group_size``,
                ``max_row_group_bytes``, ``compression``, ...).

        Returns:
            The number of bytes written.

        Example:
            >>> import os, tempfile
            >>> folder = tempfile.mkdtemp()
            >>> ds = IterableDataset.from_dict({"a": list(range(100))}, num_shards=4)
            >>> pattern = folder + "/train-{index:05d}-of-{num_shards:05d}.parquet"
            >>> _ = ds.to_parquet(pattern, num_shards=2)
            >>> sorted(os.listdir(folder))
            ['train-00000-of-00002.parquet', 'train-00001-of-00002.parquet']
        """
        from dagster_ds.streaming._exports import export

        return export(
            self,
            "parquet",
            path_or_buf,
            batch_size=batch_size,
            storage_options=storage_options,
            num_shards=num_shards,
            options=parquet_writer_kwargs,
        )

    def to_csv(
        self,
        path_or_buf: str | os.PathLike[str] | BinaryIO,
        batch_size: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        num_shards: int | None = None,
        **to_csv_kwargs: Any,
    ) -> int:
        """Write the stream to CSV batch by batch (see `to_parquet`); return the bytes written.

        ``to_csv_kwargs`` are `CsvWriter` options: ``delimiter``, ``header``, ``index``.

        Example:
            >>> import tempfile
            >>> IterableDataset.from_dict({"a": [1, 2]}).to_csv(tempfile.mkdtemp() + "/out.csv")
            6
        """
        from dagster_ds.streaming._exports import export

        return export(
            self,
            "csv",
            path_or_buf,
            batch_size=batch_size,
            storage_options=storage_options,
            num_shards=num_shards,
            options=to_csv_kwargs,
        )

    def to_json(
        self,
        path_or_buf: str | os.PathLike[str] | BinaryIO,
        batch_size: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        num_shards: int | None = None,
        **to_json_kwargs: Any,
    ) -> int:
        """Write the stream to JSON Lines (``lines=False``: one JSON array) batch by batch.

        See `to_parquet`; a ``.gz``/``.zst``/``.bz2``/``.xz`` suffix compresses.

        Example:
            >>> import tempfile
            >>> IterableDataset.from_dict({"a": [1, 2]}).to_json(tempfile.mkdtemp() + "/a.jsonl")
            16
        """
        from dagster_ds.streaming._exports import export

        return export(
            self,
            "json",
            path_or_buf,
            batch_size=batch_size,
            storage_options=storage_options,
            num_shards=num_shards,
            options=to_json_kwargs,
        )

    def to_list(self) -> list[Any]:
        """Every example, as a list (the whole stream in memory).

        Example:
            >>> IterableDataset.from_dict({"a": [1, 2]}).to_list()
            [{'a': 1}, {'a': 2}]
        """
        return list(self)

    def to_dict(self) -> dict[str, list[Any]]:
        """Every example, as a dict of columns (the whole stream in memory).

        Example:
            >>> IterableDataset.from_dict({"a": [1, 2]}).to_dict()
            {'a': [1, 2]}
        """
        return self._table().to_pydict()

    def to_pandas(
        self, batch_size: int | None = None, batched: bool = False
    ) -> pd.DataFrame | Iterator[pd.DataFrame]:
        """Every example, as a pandas DataFrame (the whole stream in memory).

        With ``batched``, one DataFrame per ``batch_size`` examples (default 1000), in
        bounded memory, as the anchor.

        Example:
            >>> IterableDataset.from_dict({"a": [1, 2]}).to_pandas().shape
            (2, 1)
            >>> [f.shape for f in IterableDataset.from_dict({"a": [1, 2, 3]}).to_pandas(2, True)]
            [(2, 1), (1, 1)]
        """
        if batched:
            return self._frames(batch_size or 1000)
        return self._table().to_pandas()  # pyright: ignore[reportUnknownMemberType]

    def _frames(self, batch_size: int) -> Iterator[pd.DataFrame]:
        for table in self.with_format("arrow").iter(batch_size=batch_size):
            yield table.to_pandas()  # pyright: ignore[reportUnknownMemberType]

    def _table(self) -> pa.Table:
        batches = list(self._record_batches())
        if not batches:
            features = self.features
            schema = features.arrow_schema if features is not None else pa.schema([])
            return schema.empty_table()
        tables = [pa.Table.from_batches([batch]) for batch in batches]
        return pa.concat_tables(tables, promote_options="permissive")

    def _resolve_features(self) -> Features:
        """The features, reading the first batch when they are unknown (as the anchor)."""
        features = self.features
        if features is not None:
            return features
        for batch in self._record_batches():
            return Features.from_arrow_schema(batch.schema)
        return Features()


def _add_torch_base(cls: type) -> None:
    """Make ``cls`` a torch ``IterableDataset`` too, when torch is already imported."""
    if "torch" not in sys.modules:
        return
    from torch.utils.data import IterableDataset as TorchIterableDataset

    # Look at the MRO, not issubclass: torch's class is an ABC, which would cache the
    # negative answer and keep isinstance() False after the base is added.
    if TorchIterableDataset not in cls.__mro__:
        cls.__bases__ += (TorchIterableDataset,)

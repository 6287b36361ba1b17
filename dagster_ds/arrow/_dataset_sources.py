"""The anchor's file constructors of `Dataset`: from_csv/json/parquet/text, from_file.

Each loads one format's files as `load_dataset` does (`arrow/_files.py`), so the
result is cached by the files' content like any loaded split; ``from_file``
memory-maps an Arrow file as it is.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from dagster_ds.cache import cache_root

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset
    from dagster_ds.features import Features

PathOrPaths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


@contextlib.contextmanager
def in_cache_dir(cache_dir: str | os.PathLike[str] | None) -> Iterator[None]:
    """Results made inside cache into ``cache_dir`` (the anchor's ``cache_dir=``), if given.

    The one mechanism an asset uses too (`cache_root`): a process given the same
    folder finds what another stored there.
    """
    if cache_dir is None:
        yield
        return
    with cache_root(os.fspath(cache_dir)):
        yield


def _load(
    cls: type[SourceMethods],
    kind: str,
    path_or_paths: PathOrPaths,
    split: str | None,
    features: Features | None,
    num_proc: int | None,
    kwargs: dict[str, Any],
) -> Dataset:
    from dagster_ds.arrow._files import dataset_from_files

    del num_proc  # reading streams batch by batch; there is nothing to spread
    keep_in_memory = bool(kwargs.pop("keep_in_memory", False))
    files: Any = (
        os.fspath(path_or_paths)
        if isinstance(path_or_paths, str | os.PathLike)
        else [os.fspath(path) for path in path_or_paths]
    )
    with in_cache_dir(kwargs.pop("cache_dir", None)):
        dataset = dataset_from_files(
            cast("type[Dataset]", cls), kind, files, split or "train", features, **kwargs
        )
    return kept_in_memory(dataset) if keep_in_memory else dataset


def kept_in_memory(dataset: Dataset) -> Dataset:
    """``dataset`` with its rows copied into Arrow's memory (the anchor's ``keep_in_memory``).

    The result is cached as usual, then read whole into memory: it has the same
    fingerprint, and no cache files (``cache_files == []``), as the anchor's.
    """
    import pyarrow as pa

    from dagster_ds.arrow._shards import Shard

    table = dataset._read(slice(0, len(dataset)))  # pyright: ignore[reportPrivateUsage]
    sink = pa.BufferOutputStream()  # allocated from Arrow's pool; the table reads it in place
    with pa.ipc.new_stream(sink, table.schema) as stream:
        stream.write_table(table)
    copied = pa.ipc.open_stream(sink.getvalue()).read_all()
    return type(dataset)._from_shards(  # pyright: ignore[reportPrivateUsage]
        dataset, (Shard(dataset.fingerprint, copied),), fingerprint=dataset.fingerprint
    )


class SourceMethods:
    """Mixed into `Dataset`: constructors from data files."""

    @classmethod
    def from_csv(
        cls,
        path_or_paths: PathOrPaths,
        split: str | None = None,
        features: Features | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        keep_in_memory: bool = False,
        num_proc: int | None = None,
        **kwargs: Any,
    ) -> Dataset:
        r"""A dataset from one or several CSV files (``kwargs``: `iter_csv_batches` options).

        ``cache_dir`` is the cache the result is stored in (default: the dagster_ds
        cache); with ``keep_in_memory`` its rows are then read into memory, as the anchor.

        Example:
            >>> import pathlib, tempfile
            >>> path = tempfile.mkdtemp() + "/a.csv"
            >>> _ = pathlib.Path(path).write_text("a,b\n1,x\n")
            >>> Dataset.from_csv(path)[0]
            {'a': 1, 'b': 'x'}
        """
        options = {**kwargs, "cache_dir": cache_dir, "keep_in_memory": keep_in_memory}
        return _load(cls, "csv", path_or_paths, split, features, num_proc, options)

    @classmethod
    def from_json(
        cls,
        path_or_paths: PathOrPaths,
        split: str | None = None,
        features: Features | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        keep_in_memory: bool = False,
        field: str | None = None,
        num_proc: int | None = None,
        **kwargs: Any,
    ) -> Dataset:
        r"""A dataset from JSON Lines or JSON files (``field``: the key holding the records).

        Example:
            >>> import pathlib, tempfile
            >>> path = tempfile.mkdtemp() + "/a.jsonl"
            >>> _ = pathlib.Path(path).write_text('{"a": 1}\n{"a": 2}\n')
            >>> Dataset.from_json(path)["a"][:]
            [1, 2]
        """
        options = {**kwargs, "cache_dir": cache_dir, "keep_in_memory": keep_in_memory}
        if field is not None:
            options["field"] = field
        return _load(cls, "json", path_or_paths, split, features, num_proc, options)

    @classmethod
    def from_parquet(
        cls,
        path_or_paths: PathOrPaths,
        split: str | None = None,
        features: Features | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        keep_in_memory: bool = False,
        columns: Sequence[str] | None = None,
        num_proc: int | None = None,
        **kwargs: Any,
    ) -> Dataset:
        """A dataset from Parquet files (only ``columns``, when given; ``filters=`` too).

        Example:
            >>> import tempfile
            >>> path = tempfile.mkdtemp() + "/a.parquet"
            >>> _ = Dataset.from_dict({"a": [1], "b": [2]}).to_parquet(path)
            >>> Dataset.from_parquet(path, columns=["b"]).column_names
            ['b']
        """
        options = {**kwargs, "cache_dir": cache_dir, "keep_in_memory": keep_in_memory}
        if columns is not None:
            options["columns"] = list(columns)
        return _load(cls, "parquet", path_or_paths, split, features, num_proc, options)

    @classmethod
    def from_text(
        cls,
        path_or_paths: PathOrPaths,
        split: str | None = None,
        features: Features | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        keep_in_memory: bool = False,
        num_proc: int | None = None,
        **kwargs: Any,
    ) -> Dataset:
        r"""A dataset of one ``text`` column, a row per line of the text files.

        Example:
            >>> import pathlib, tempfile
            >>> path = tempfile.mkdtemp() + "/a.txt"
            >>> _ = pathlib.Path(path).write_text("hello\nworld\n")
            >>> Dataset.from_text(path)["text"][:]
            ['hello', 'world']
        """
        options = {**kwargs, "cache_dir": cache_dir, "keep_in_memory": keep_in_memory}
        return _load(cls, "text", path_or_paths, split, features, num_proc, options)

    @classmethod
    def from_file(
        cls,
        filename: str,
        info: Any = None,
        split: str | None = None,
        indices_filename: str | None = None,
        in_memory: bool = False,
    ) -> Dataset:
        """A dataset memory-mapped from an Arrow file (the anchor's cache files, ``data-*.arrow``).

        The features come from ``info.features`` when given, else from the file's
        schema metadata. ``indices_filename`` (an Arrow file with one ``indices``
        column) selects and orders the rows.

        Example:
            >>> import glob, tempfile
            >>> folder = tempfile.mkdtemp()
            >>> Dataset.from_dict({"a": [1, 2]}).save_to_disk(folder)
            >>> Dataset.from_file(glob.glob(folder + "/*.arrow")[0])["a"][:]
            [1, 2]
        """
        from dagster_ds.features import features_from_schema_metadata

        table = _read_arrow_file(filename, in_memory)
        features: Features | None = getattr(info, "features", None)
        if features is None:
            features = features_from_schema_metadata(table.schema.metadata)
        dataset = cast("type[Dataset]", cls)(table, features=features, split=split)
        if indices_filename is None:
            return dataset
        indices = _read_arrow_file(indices_filename, in_memory).column(0).to_pylist()
        return dataset.select(indices)


def _read_arrow_file(filename: str, in_memory: bool) -> Any:
    import pyarrow as pa

    from dagster_ds.errors import MalformedFileError

    path = os.fspath(filename)
    source = pa.OSFile(path, "rb") if in_memory else pa.memory_map(path)
    try:
        try:
            return pa.ipc.open_stream(source).read_all()
        except pa.ArrowInvalid:
            source.seek(0)
            return pa.ipc.open_file(source).read_all()
    except pa.ArrowInvalid as error:
        raise MalformedFileError(
            f"{filename!r} is not an Arrow IPC file (stream or file format): {error}. "
            "Pass a file written by save_to_disk or the anchor's cache, or use load_dataset.",
            path=str(filename),
        ) from error

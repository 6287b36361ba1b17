"""DatasetDict: named splits, each a Dataset, transformed together."""

from __future__ import annotations

import contextlib
import functools
import os
import posixpath
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dagster_ds.arrow._dataset import Dataset
from dagster_ds.errors import InvalidArgumentError, InvalidSplitError

if TYPE_CHECKING:
    from dagster_ds.features import Features
    from dagster_ds.hub import PushResult


class DatasetDict(dict[str, Dataset]):
    """A dict of splits (``{"train": Dataset, "test": Dataset}``) transformed together.

    Each transform method applies to every split with the same arguments.

    Example:
        >>> splits = DatasetDict({"train": Dataset.from_dict({"a": [1, 2]})})
        >>> splits.map(lambda x: {"b": x["a"] * 2})["train"]["b"][:]
        [2, 4]
    """

    def _check_values_type(self) -> None:
        for name, split in self.items():
            if not isinstance(split, Dataset):
                raise InvalidSplitError(
                    f"DatasetDict split {name!r} is a {type(split).__name__}, not a Dataset; "
                    "every value of a DatasetDict must be a Dataset (remove or replace it)."
                )

    def _each(self, method: str, *args: Any, **kwargs: Any) -> DatasetDict:
        self._check_values_type()
        return DatasetDict(
            {name: getattr(split, method)(*args, **kwargs) for name, split in self.items()}
        )

    @property
    def column_names(self) -> dict[str, list[str]]:
        """Each split's column names."""
        return {name: split.column_names for name, split in self.items()}

    @property
    def num_rows(self) -> dict[str, int]:
        """Each split's number of rows."""
        return {name: split.num_rows for name, split in self.items()}

    @property
    def shape(self) -> dict[str, tuple[int, int]]:
        """Each split's ``(num_rows, num_columns)``."""
        return {name: split.shape for name, split in self.items()}

    @property
    def num_columns(self) -> dict[str, int]:
        """Each split's number of columns."""
        return {name: split.num_columns for name, split in self.items()}

    @property
    def data(self) -> dict[str, Any]:
        """Each split's Arrow table."""
        return {name: split.data for name, split in self.items()}

    @property
    def cache_files(self) -> dict[str, list[dict[str, str]]]:
        """Each split's cache entries."""
        return {name: split.cache_files for name, split in self.items()}

    def __enter__(self) -> DatasetDict:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Release every split's memory maps, as the anchor does."""
        for split in self.values():
            split.__exit__(None, None, None)

    # -- transforms: each split, same arguments --------------------------------

    def map(
        self,
        function: Callable[..., Any] | None = None,
        with_indices: bool = False,
        with_rank: bool = False,
        with_split: bool = False,
        input_columns: str | Sequence[str] | None = None,
        batched: bool = False,
        batch_size: int | None = 1000,
        drop_last_batch: bool = False,
        remove_columns: str | Sequence[str] | None = None,
        keep_in_memory: bool = False,
        load_from_cache_file: bool | None = None,
        cache_file_names: Mapping[str, str | None] | None = None,
        writer_batch_size: int | None = 1000,
        features: Features | None = None,
        disable_nullable: bool = False,
        fn_kwargs: Mapping[str, Any] | None = None,
        num_proc: int | None = None,
        desc: str | None = None,
        try_original_type: bool | None = True,
        on_mixed_types: str | None = None,
    ) -> DatasetDict:
        """`Dataset.map` on every split (``cache_file_names``: one name per split).

        ``with_split`` passes the split's name after the example (and index). A
        function with ``with_rank`` gets rank 0 (there are no GPU workers here).

        Example:
            >>> splits = DatasetDict({"train": Dataset.from_dict({"a": [1]})})
            >>> splits.map(lambda x, split: {"s": split}, with_split=True)["train"][0]
            {'a': 1, 's': 'train'}
        """
        self._check_values_type()
        _only_first_rank(with_rank, "map")
        del try_original_type
        results: dict[str, Dataset] = {}
        for name, split in self.items():
            call = function
            if with_split and function is not None:
                call = functools.partial(_with_split, function, name)
            results[name] = split.map(
                call,
                with_indices=with_indices,
                input_columns=input_columns,
                batched=batched,
                batch_size=batch_size,
                drop_last_batch=drop_last_batch,
                remove_columns=remove_columns,
                keep_in_memory=keep_in_memory,
                load_from_cache_file=load_from_cache_file,
                cache_file_name=_for(cache_file_names, name),
                writer_batch_size=writer_batch_size,
                features=features,
                disable_nullable=disable_nullable,
                fn_kwargs=fn_kwargs,
                num_proc=num_proc,
                desc=desc,
                on_mixed_types=on_mixed_types,
            )
        return DatasetDict(results)

    def filter(
        self,
        function: Callable[..., Any] | None = None,
        with_indices: bool = False,
        with_rank: bool = False,
        input_columns: str | Sequence[str] | None = None,
        batched: bool = False,
        batch_size: int | None = 1000,
        keep_in_memory: bool = False,
        load_from_cache_file: bool | None = None,
        cache_file_names: Mapping[str, str | None] | None = None,
        writer_batch_size: int | None = 1000,
        fn_kwargs: Mapping[str, Any] | None = None,
        num_proc: int | None = None,
        desc: str | None = None,
    ) -> DatasetDict:
        """`Dataset.filter` on every split (``cache_file_names``: one name per split).

        Example:
            >>> splits = DatasetDict({"train": Dataset.from_dict({"a": [1, 2]})})
            >>> splits.filter(lambda x: x["a"] > 1)["train"]["a"][:]
            [2]
        """
        self._check_values_type()
        return DatasetDict(
            {
                name: split.filter(
                    function,
                    with_indices=with_indices,
                    with_rank=with_rank,
                    input_columns=input_columns,
                    batched=batched,
                    batch_size=batch_size,
                    keep_in_memory=keep_in_memory,
                    load_from_cache_file=load_from_cache_file,
                    cache_file_name=_for(cache_file_names, name),
                    writer_batch_size=writer_batch_size,
                    fn_kwargs=fn_kwargs,
                    num_proc=num_proc,
                    desc=desc,
                )
                for name, split in self.items()
            }
        )

    def sort(
        self,
        column_names: str | Sequence[str],
        reverse: bool | Sequence[bool] = False,
        null_placement: str = "at_end",
        keep_in_memory: bool = False,
        load_from_cache_file: bool | None = None,
        indices_cache_file_names: Mapping[str, str | None] | None = None,
        writer_batch_size: int | None = 1000,
    ) -> DatasetDict:
        """`Dataset.sort` on every split.

        Example:
            >>> splits = DatasetDict({"train": Dataset.from_dict({"a": [2, 1]})})
            >>> splits.sort("a")["train"]["a"][:]
            [1, 2]
        """
        self._check_values_type()
        return DatasetDict(
            {
                name: split.sort(
                    column_names,
                    reverse=reverse,
                    null_placement=null_placement,
                    keep_in_memory=keep_in_memory,
                    load_from_cache_file=load_from_cache_file,
                    indices_cache_file_name=_for(indices_cache_file_names, name),
                    writer_batch_size=writer_batch_size,
                )
                for name, split in self.items()
            }
        )

    def shuffle(
        self,
        seeds: int | Mapping[str, int | None] | None = None,
        seed: int | None = None,
        generators: Mapping[str, Any] | None = None,
        keep_in_memory: bool = False,
        load_from_cache_file: bool | None = None,
        indices_cache_file_names: Mapping[str, str | None] | None = None,
        writer_batch_size: int | None = 1000,
    ) -> DatasetDict:
        """`Dataset.shuffle` on every split: ``seeds`` is one seed, or one per split.

        ``seed`` is the anchor's alias of ``seeds``; ``generators`` one numpy
        generator per split.

        Example:
            >>> splits = DatasetDict({"train": Dataset.from_dict({"a": [1, 2, 3]})})
            >>> sorted(splits.shuffle(seeds={"train": 1})["train"]["a"][:])
            [1, 2, 3]
        """
        self._check_values_type()
        if seed is not None and seeds is not None:
            raise InvalidArgumentError(
                "shuffle: pass seeds= or its alias seed=, not both "
                f"(got seeds={seeds!r}, seed={seed!r})."
            )
        chosen = seeds if seeds is not None else seed
        return DatasetDict(
            {
                name: split.shuffle(
                    seed=chosen.get(name) if isinstance(chosen, Mapping) else chosen,
                    generator=_for(generators, name),
                    keep_in_memory=keep_in_memory,
                    load_from_cache_file=load_from_cache_file,
                    indices_cache_file_name=_for(indices_cache_file_names, name),
                    writer_batch_size=writer_batch_size,
                )
                for name, split in self.items()
            }
        )

    def with_format(
        self,
        type: str | None = None,
        columns: Sequence[str] | None = None,
        output_all_columns: bool = False,
        **format_kwargs: Any,
    ) -> DatasetDict:
        """`Dataset.with_format` on every split."""
        return self._each("with_format", type, columns, output_all_columns, **format_kwargs)

    def set_format(
        self,
        type: str | None = None,
        columns: Sequence[str] | None = None,
        output_all_columns: bool = False,
        **format_kwargs: Any,
    ) -> None:
        """`Dataset.set_format` on every split, in place.

        Example:
            >>> splits = DatasetDict({"train": Dataset.from_dict({"a": [1]})})
            >>> splits.set_format("numpy")
            >>> splits["train"].format["type"]
            'numpy'
        """
        self._check_values_type()
        for split in self.values():
            split.set_format(type, columns, output_all_columns, **format_kwargs)

    def reset_format(self) -> None:
        """`Dataset.reset_format` on every split, in place."""
        self.set_format(None)

    @contextlib.contextmanager
    def formatted_as(
        self,
        type: str | None = None,
        columns: Sequence[str] | None = None,
        output_all_columns: bool = False,
        **format_kwargs: Any,
    ) -> Iterator[None]:
        """`Dataset.formatted_as` on every split, for a ``with`` block."""
        self._check_values_type()
        with contextlib.ExitStack() as stack:
            for split in self.values():
                stack.enter_context(
                    split.formatted_as(type, columns, output_all_columns, **format_kwargs)
                )
            yield

    def with_transform(
        self,
        transform: Callable[[dict[str, list[Any]]], Any] | None,
        columns: Sequence[str] | None = None,
        output_all_columns: bool = False,
    ) -> DatasetDict:
        """`Dataset.with_transform` on every split."""
        return self._each("with_transform", transform, columns, output_all_columns)

    def set_transform(
        self,
        transform: Callable[[dict[str, list[Any]]], Any] | None,
        columns: Sequence[str] | None = None,
        output_all_columns: bool = False,
    ) -> None:
        """`Dataset.set_transform` on every split, in place."""
        self._check_values_type()
        for split in self.values():
            split.set_transform(transform, columns, output_all_columns)

    def rename_column(self, original_column_name: str, new_column_name: str) -> DatasetDict:
        """`Dataset.rename_column` on every split."""
        return self._each("rename_column", original_column_name, new_column_name)

    def rename_columns(self, column_mapping: Mapping[str, str]) -> DatasetDict:
        """`Dataset.rename_columns` on every split."""
        return self._each("rename_columns", column_mapping)

    def remove_columns(self, column_names: str | Sequence[str]) -> DatasetDict:
        """`Dataset.remove_columns` on every split."""
        return self._each("remove_columns", column_names)

    def select_columns(self, column_names: str | Sequence[str]) -> DatasetDict:
        """`Dataset.select_columns` on every split."""
        return self._each("select_columns", column_names)

    def cast(self, features: Features) -> DatasetDict:
        """`Dataset.cast` on every split."""
        return self._each("cast", features)

    def cast_column(self, column: str, feature: Any) -> DatasetDict:
        """`Dataset.cast_column` on every split."""
        return self._each("cast_column", column, feature)

    def class_encode_column(self, column: str, include_nulls: bool = False) -> DatasetDict:
        """`Dataset.class_encode_column` with names from every split, so all splits agree.

        Example:
            >>> splits = DatasetDict({"a": Dataset.from_dict({"c": ["x"]}),
            ...                       "b": Dataset.from_dict({"c": ["y"]})})
            >>> splits.class_encode_column("c")["b"].features["c"].names
            ['x', 'y']
        """
        from dagster_ds.features import ClassLabel

        self._check_values_type()
        names: set[str] = set()
        for split in self.values():
            encoded = split.class_encode_column(column, include_nulls)
            feature = encoded.features[column]
            assert isinstance(feature, ClassLabel)
            names.update(feature.names)
        label = ClassLabel(names=sorted(names))
        return DatasetDict(
            {
                name: _cast_to_label(split, column, label, include_nulls)
                for name, split in self.items()
            }
        )

    def align_labels_with_mapping(
        self, label2id: Mapping[str, int], label_column: str
    ) -> DatasetDict:
        """`Dataset.align_labels_with_mapping` on every split."""
        return self._each("align_labels_with_mapping", label2id, label_column)

    def unique(self, column: str) -> dict[str, list[Any]]:
        """Each split's distinct values of ``column``."""
        self._check_values_type()
        return {name: split.unique(column) for name, split in self.items()}

    def flatten(self, max_depth: int = 16) -> DatasetDict:
        """`Dataset.flatten` on every split."""
        return self._each("flatten", max_depth=max_depth)

    def flatten_indices(
        self,
        keep_in_memory: bool = False,
        cache_file_names: Mapping[str, str | None] | None = None,
        writer_batch_size: int | None = 1000,
        features: Features | None = None,
        disable_nullable: bool = False,
        num_proc: int | None = None,
        new_fingerprint: str | None = None,
    ) -> DatasetDict:
        """`Dataset.flatten_indices` on every split."""
        del cache_file_names, writer_batch_size, features, disable_nullable, num_proc
        return self._each(
            "flatten_indices", keep_in_memory=keep_in_memory, new_fingerprint=new_fingerprint
        )

    def cleanup_cache_files(self) -> dict[str, int]:
        """`Dataset.cleanup_cache_files` on every split; how many entries each removed."""
        self._check_values_type()
        return {name: split.cleanup_cache_files() for name, split in self.items()}

    # -- storage -----------------------------------------------------------------

    def save_to_disk(
        self,
        dataset_dict_path: str | os.PathLike[str],
        max_shard_size: int | str | None = None,
        num_shards: Mapping[str, int] | None = None,
        num_proc: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        """Save every split in the anchor's layout: ``dataset_dict.json`` and a folder per split.

        ``datasets.load_from_disk`` and `load_from_disk` read it back.

        Example:
            >>> import tempfile
            >>> folder = tempfile.mkdtemp() + "/splits"
            >>> DatasetDict({"train": Dataset.from_dict({"a": [1]})}).save_to_disk(folder)
            >>> load_from_disk(folder)["train"]["a"][:]
            [1]
        """
        from dagster_ds.arrow._dict_disk import save_dataset_dict

        self._check_values_type()
        del num_proc  # writing is I/O bound and batch by batch
        save_dataset_dict(
            self, os.fspath(dataset_dict_path), max_shard_size, num_shards, storage_options
        )

    @staticmethod
    def load_from_disk(
        dataset_dict_path: str | os.PathLike[str],
        keep_in_memory: bool | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> DatasetDict:
        """Load what `save_to_disk` (ours or the anchor's) wrote."""
        from dagster_ds.arrow._dict_disk import saved_split_names

        del keep_in_memory
        path = os.fspath(dataset_dict_path)
        return DatasetDict(
            {
                name: Dataset.load_from_disk(
                    posixpath.join(path.rstrip("/"), name), storage_options=storage_options
                )
                for name in saved_split_names(path, storage_options)
            }
        )

    @staticmethod
    def from_csv(
        path_or_paths: Mapping[str, Any],
        features: Features | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        keep_in_memory: bool = False,
        **kwargs: Any,
    ) -> DatasetDict:
        """One split per entry of ``path_or_paths`` (split name to path or paths), from CSV."""
        return _from_files(
            Dataset.from_csv,
            path_or_paths,
            features,
            {**kwargs, "cache_dir": cache_dir, "keep_in_memory": keep_in_memory},
        )

    @staticmethod
    def from_json(
        path_or_paths: Mapping[str, Any],
        features: Features | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        keep_in_memory: bool = False,
        **kwargs: Any,
    ) -> DatasetDict:
        r"""One split per entry of ``path_or_paths``, from JSON Lines or JSON.

        Example:
            >>> import pathlib, tempfile
            >>> path = tempfile.mkdtemp() + "/a.jsonl"
            >>> _ = pathlib.Path(path).write_text('{"a": 1}\n')
            >>> DatasetDict.from_json({"test": path})["test"]["a"][:]
            [1]
        """
        return _from_files(
            Dataset.from_json,
            path_or_paths,
            features,
            {**kwargs, "cache_dir": cache_dir, "keep_in_memory": keep_in_memory},
        )

    @staticmethod
    def from_parquet(
        path_or_paths: Mapping[str, Any],
        features: Features | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        keep_in_memory: bool = False,
        columns: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> DatasetDict:
        """One split per entry of ``path_or_paths``, from Parquet (only ``columns``)."""
        return _from_files(
            Dataset.from_parquet,
            path_or_paths,
            features,
            {
                "columns": columns,
                **kwargs,
                "cache_dir": cache_dir,
                "keep_in_memory": keep_in_memory,
            },
        )

    @staticmethod
    def from_text(
        path_or_paths: Mapping[str, Any],
        features: Features | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        keep_in_memory: bool = False,
        **kwargs: Any,
    ) -> DatasetDict:
        """One split per entry of ``path_or_paths``, a row per line of text."""
        return _from_files(
            Dataset.from_text,
            path_or_paths,
            features,
            {**kwargs, "cache_dir": cache_dir, "keep_in_memory": keep_in_memory},
        )

    def push_to_hub(
        self,
        repo_id: str,
        config_name: str = "default",
        set_default: bool | None = None,
        data_dir: str | None = None,
        commit_message: str | None = None,
        commit_description: str | None = None,
        private: bool | None = None,
        token: str | None = None,
        revision: str | None = None,
        create_pr: bool | None = False,
        max_shard_size: int | str | None = None,
        num_shards: Mapping[str, int | None] | None = None,
        embed_external_files: bool = True,
        num_proc: int | None = None,
        *,
        endpoint: str | None = None,
    ) -> PushResult:
        """Push every split to a Hub dataset repository in ONE commit (see `Dataset.push_to_hub`).

        As the anchor does, the config's splits become exactly this dict's and
        its data folder holds only their files; other configs are kept.
        ``num_shards`` is a dict of split to count. Splits whose fingerprint the
        card already records keep their files; if all do, no commit is made.

        Example:
            >>> from dagster_ds.testing import LocalHubServer
            >>> splits = DatasetDict({"train": Dataset.from_dict({"a": [1, 2]}),
            ...                       "test": Dataset.from_dict({"a": [3]})})
            >>> with LocalHubServer() as hub:
            ...     result = splits.push_to_hub("user/demo", endpoint=hub.endpoint)
            >>> result.splits, dict(result.num_rows)
            (('train', 'test'), {'train': 2, 'test': 1})
        """
        from dagster_ds.hub import PushTarget, push_dataset_dict

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
        return push_dataset_dict(self, target, max_shard_size, num_shards, num_proc)

    def __repr__(self) -> str:
        body = "\n".join(
            f"    {name}: " + repr(split).replace("\n", "\n    ") for name, split in self.items()
        )
        return f"DatasetDict({{\n{body}\n}})"


def _for(values: Mapping[str, Any] | None, split: str) -> Any:
    return values.get(split) if values is not None else None


def _only_first_rank(with_rank: bool, method: str) -> None:
    if with_rank:
        raise InvalidArgumentError(
            f"{method}(with_rank=True) passes a GPU rank to the function; dagster_ds runs "
            "no GPU worker processes. Leave it out (or read the rank from your own setup)."
        )


def _with_split(function: Callable[..., Any], split: str, *args: Any, **kwargs: Any) -> Any:
    return function(*args, split, **kwargs)


def _cast_to_label(split: Dataset, column: str, label: Any, include_nulls: bool) -> Dataset:
    from dagster_ds.features import Value

    feature = split.features[column]
    texts = (
        split
        if getattr(feature, "dtype", None) == "string"
        else split.cast_column(column, Value("string"))
    )
    if include_nulls:
        texts = texts.map(
            lambda values: {column: ["None" if value is None else value for value in values]},
            input_columns=[column],
            batched=True,
        )
    return texts.cast_column(column, label)


def _from_files(
    read: Callable[..., Dataset],
    path_or_paths: Mapping[str, Any],
    features: Features | None,
    kwargs: Mapping[str, Any],
) -> DatasetDict:
    options = {key: value for key, value in kwargs.items() if value is not None}
    return DatasetDict(
        {
            name: read(paths, split=name, features=features, **options)
            for name, paths in path_or_paths.items()
        }
    )

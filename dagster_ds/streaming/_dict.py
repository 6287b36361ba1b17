"""IterableDatasetDict: named splits, each an IterableDataset, transformed together."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dagster_ds.streaming._dataset import IterableDataset

if TYPE_CHECKING:
    from dagster_ds.hub import PushResult


class IterableDatasetDict(dict[str, IterableDataset]):
    """A dict of streamed splits (``{"train": ..., "test": ...}``) transformed together.

    What `load_dataset(..., streaming=True)` returns without ``split=``. Each
    transform method applies to every split with the same arguments.

    Example:
        >>> splits = IterableDatasetDict({"train": IterableDataset.from_dict({"a": [1, 2]})})
        >>> list(splits.map(lambda x: {"b": x["a"] * 2})["train"])
        [{'a': 1, 'b': 2}, {'a': 2, 'b': 4}]
    """

    def _each(self, method: str, *args: Any, **kwargs: Any) -> IterableDatasetDict:
        return IterableDatasetDict(
            {name: getattr(split, method)(*args, **kwargs) for name, split in self.items()}
        )

    @property
    def num_shards(self) -> dict[str, int]:
        """Each split's number of shards."""
        return {name: split.num_shards for name, split in self.items()}

    def map(self, *args: Any, **kwargs: Any) -> IterableDatasetDict:
        """`IterableDataset.map` on every split."""
        return self._each("map", *args, **kwargs)

    def filter(self, *args: Any, **kwargs: Any) -> IterableDatasetDict:
        """`IterableDataset.filter` on every split."""
        return self._each("filter", *args, **kwargs)

    def shuffle(self, *args: Any, **kwargs: Any) -> IterableDatasetDict:
        """`IterableDataset.shuffle` on every split, with the same seed."""
        return self._each("shuffle", *args, **kwargs)

    def with_format(self, *args: Any, **kwargs: Any) -> IterableDatasetDict:
        """`IterableDataset.with_format` on every split."""
        return self._each("with_format", *args, **kwargs)

    def rename_column(self, *args: Any, **kwargs: Any) -> IterableDatasetDict:
        """`IterableDataset.rename_column` on every split."""
        return self._each("rename_column", *args, **kwargs)

    def rename_columns(self, *args: Any, **kwargs: Any) -> IterableDatasetDict:
        """`IterableDataset.rename_columns` on every split."""
        return self._each("rename_columns", *args, **kwargs)

    def remove_columns(self, *args: Any, **kwargs: Any) -> IterableDatasetDict:
        """`IterableDataset.remove_columns` on every split."""
        return self._each("remove_columns", *args, **kwargs)

    def select_columns(self, *args: Any, **kwargs: Any) -> IterableDatasetDict:
        """`IterableDataset.select_columns` on every split."""
        return self._each("select_columns", *args, **kwargs)

    def cast(self, *args: Any, **kwargs: Any) -> IterableDatasetDict:
        """`IterableDataset.cast` on every split."""
        return self._each("cast", *args, **kwargs)

    def cast_column(self, *args: Any, **kwargs: Any) -> IterableDatasetDict:
        """`IterableDataset.cast_column` on every split."""
        return self._each("cast_column", *args, **kwargs)

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
        """Stream every split to a Hub repository in ONE commit (see `DatasetDict.push_to_hub`).

        Example:
            >>> from dagster_ds.testing import LocalHubServer
            >>> splits = IterableDatasetDict({"train": IterableDataset.from_dict({"a": [1, 2]})})
            >>> with LocalHubServer() as hub:
            ...     result = splits.push_to_hub("user/demo", endpoint=hub.endpoint)
            >>> dict(result.num_rows)
            {'train': 2}
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
        return push_dataset_dict(self, target, max_shard_size, num_shards, num_proc, streaming=True)

    def __repr__(self) -> str:
        body = "\n".join(
            f"    {name}: " + repr(split).replace("\n", "\n    ") for name, split in self.items()
        )
        return f"IterableDatasetDict({{\n{body}\n}})"

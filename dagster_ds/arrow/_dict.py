"""DatasetDict: named splits, each a Dataset, transformed together."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dagster_ds.arrow._dataset import Dataset
from dagster_ds.errors import InvalidSplitError

if TYPE_CHECKING:
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

    def map(self, *args: Any, **kwargs: Any) -> DatasetDict:
        """`Dataset.map` on every split."""
        return self._each("map", *args, **kwargs)

    def filter(self, *args: Any, **kwargs: Any) -> DatasetDict:
        """`Dataset.filter` on every split."""
        return self._each("filter", *args, **kwargs)

    def sort(self, *args: Any, **kwargs: Any) -> DatasetDict:
        """`Dataset.sort` on every split."""
        return self._each("sort", *args, **kwargs)

    def shuffle(self, seed: int | None = None, **kwargs: Any) -> DatasetDict:
        """`Dataset.shuffle` on every split, with the same seed."""
        return self._each("shuffle", seed=seed, **kwargs)

    def with_format(self, *args: Any, **kwargs: Any) -> DatasetDict:
        """`Dataset.with_format` on every split."""
        return self._each("with_format", *args, **kwargs)

    def rename_column(self, *args: Any, **kwargs: Any) -> DatasetDict:
        """`Dataset.rename_column` on every split."""
        return self._each("rename_column", *args, **kwargs)

    def rename_columns(self, *args: Any, **kwargs: Any) -> DatasetDict:
        """`Dataset.rename_columns` on every split."""
        return self._each("rename_columns", *args, **kwargs)

    def remove_columns(self, *args: Any, **kwargs: Any) -> DatasetDict:
        """`Dataset.remove_columns` on every split."""
        return self._each("remove_columns", *args, **kwargs)

    def select_columns(self, *args: Any, **kwargs: Any) -> DatasetDict:
        """`Dataset.select_columns` on every split."""
        return self._each("select_columns", *args, **kwargs)

    def cast(self, *args: Any, **kwargs: Any) -> DatasetDict:
        """`Dataset.cast` on every split."""
        return self._each("cast", *args, **kwargs)

    def cast_column(self, *args: Any, **kwargs: Any) -> DatasetDict:
        """`Dataset.cast_column` on every split."""
        return self._each("cast_column", *args, **kwargs)

    def flatten_indices(self, *args: Any, **kwargs: Any) -> DatasetDict:
        """`Dataset.flatten_indices` on every split."""
        return self._each("flatten_indices", *args, **kwargs)

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
        from dagster_ds.hub._push import PushTarget
        from dagster_ds.hub._sources import push_dataset_dict

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

"""DatasetDict: named splits, each a Dataset, transformed together."""

from __future__ import annotations

from typing import Any

from dagster_ds.arrow._dataset import Dataset


class DatasetDict(dict[str, Dataset]):
    """A dict of splits (``{"train": Dataset, "test": Dataset}``) transformed together.

    Each transform method applies to every split with the same arguments.

    Example:
        >>> splits = DatasetDict({"train": Dataset.from_dict({"a": [1, 2]})})
        >>> splits.map(lambda x: {"b": x["a"] * 2})["train"]["b"][:]
        [2, 4]
    """

    def _each(self, method: str, *args: Any, **kwargs: Any) -> DatasetDict:
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

    def __repr__(self) -> str:
        body = "\n".join(
            f"    {name}: " + repr(split).replace("\n", "\n    ") for name, split in self.items()
        )
        return f"DatasetDict({{\n{body}\n}})"

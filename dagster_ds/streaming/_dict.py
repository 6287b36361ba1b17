"""IterableDatasetDict: named splits, each an IterableDataset, transformed together."""

from __future__ import annotations

from typing import Any

from dagster_ds.streaming._dataset import IterableDataset


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

    def __repr__(self) -> str:
        body = "\n".join(
            f"    {name}: " + repr(split).replace("\n", "\n    ") for name, split in self.items()
        )
        return f"IterableDatasetDict({{\n{body}\n}})"

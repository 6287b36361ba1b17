"""The storage methods of `Dataset`: save/load, exports and cache clean-up."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset


class StorageMethods:
    """Mixed into `Dataset`: saving, loading, exporting and cleaning up."""

    def save_to_disk(
        self,
        dataset_path: str,
        max_shard_size: int | str | None = None,
        num_shards: int | None = None,
        num_proc: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        """Save to a folder or fsspec URL; `load_from_disk` gives back the same fingerprint.

        The layout is the anchor's, writing is batch by batch (bounded memory),
        and atomic: an interrupted save leaves nothing loadable.

        Example:
            >>> import tempfile
            >>> folder = tempfile.mkdtemp() + "/saved"
            >>> ds = Dataset.from_dict({"a": [1]})
            >>> ds.save_to_disk(folder)
            >>> Dataset.load_from_disk(folder).fingerprint == ds.fingerprint
            True
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._disk import save_to_disk

        del num_proc
        save_to_disk(dataset, str(dataset_path), max_shard_size, num_shards, storage_options)

    def to_parquet(
        self,
        path_or_buf: str,
        batch_size: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **parquet_writer_kwargs: Any,
    ) -> int:
        """Write the rows to a Parquet file (features kept in its metadata); return the row count.

        Example:
            >>> import tempfile
            >>> Dataset.from_dict({"a": [1, 2]}).to_parquet(tempfile.mkdtemp() + "/a.parquet")
            2
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._exports import export

        return export(
            dataset, str(path_or_buf), "parquet", batch_size, storage_options, parquet_writer_kwargs
        )

    def to_csv(
        self,
        path_or_buf: str,
        batch_size: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **to_csv_kwargs: Any,
    ) -> int:
        """Write the rows to a CSV file as the anchor does; return the row count.

        Example:
            >>> import tempfile
            >>> Dataset.from_dict({"a": [1, 2]}).to_csv(tempfile.mkdtemp() + "/a.csv")
            2
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._exports import export

        return export(dataset, str(path_or_buf), "csv", batch_size, storage_options, to_csv_kwargs)

    def to_json(
        self,
        path_or_buf: str,
        batch_size: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **to_json_kwargs: Any,
    ) -> int:
        """Write the rows as JSON Lines (``lines=False``: one JSON array); return the row count.

        Example:
            >>> import tempfile
            >>> Dataset.from_dict({"a": [1, 2]}).to_json(tempfile.mkdtemp() + "/a.jsonl")
            2
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._exports import export

        return export(
            dataset, str(path_or_buf), "json", batch_size, storage_options, to_json_kwargs
        )

    def cleanup_cache_files(self) -> int:
        """Remove the cache entries this dataset's transforms wrote, except those backing it.

        Entries other processes hold open are kept. Returns how many were removed.

        Example:
            >>> ds = Dataset.from_dict({"a": [1]})
            >>> _ = ds.map(lambda x: {"b": 1})
            >>> ds.cleanup_cache_files() >= 0
            True
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._cleanup import cleanup_cache_files

        return cleanup_cache_files(dataset)

    @classmethod
    def load_from_disk(
        cls,
        dataset_path: str,
        keep_in_memory: bool | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> Dataset:
        """Load a dataset saved by `save_to_disk` (ours or the anchor's), memory-mapped.

        Example:
            >>> import tempfile
            >>> folder = tempfile.mkdtemp() + "/saved"
            >>> Dataset.from_dict({"a": [1]}).save_to_disk(folder)
            >>> Dataset.load_from_disk(folder)["a"][:]
            [1]
        """
        from dagster_ds.arrow._disk import load_from_disk

        del keep_in_memory
        return load_from_disk(cast("type[Dataset]", cls), str(dataset_path), storage_options)


def _as_dataset(mixin: object) -> Dataset:
    """The `Dataset` this mixin is part of (it is mixed into nothing else)."""
    return cast("Dataset", mixin)

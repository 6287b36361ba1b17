"""The storage methods of `Dataset`: save/load, exports and cache clean-up."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, BinaryIO, cast

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset
    from dagster_ds.hub import PushResult


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
        path_or_buf: str | os.PathLike[str] | BinaryIO,
        batch_size: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **parquet_writer_kwargs: Any,
    ) -> int:
        """Write the rows to a Parquet file (features kept in its metadata); return its size.

        ``path_or_buf`` is a path, an fsspec URL or a file object opened in
        binary mode. Pages carry checksums, verified when dagster_ds reads them.

        Example:
            >>> import tempfile
            >>> Dataset.from_dict({"a": [1, 2]}).to_parquet(tempfile.mkdtemp() + "/a.parquet") > 0
            True
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._exports import export

        return export(
            dataset, path_or_buf, "parquet", batch_size, storage_options, parquet_writer_kwargs
        )

    def to_csv(
        self,
        path_or_buf: str | os.PathLike[str] | BinaryIO,
        batch_size: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **to_csv_kwargs: Any,
    ) -> int:
        """Write the rows to a CSV file as the anchor does; return the bytes written.

        ``path_or_buf`` is a path, an fsspec URL or a file object opened in binary mode.

        Example:
            >>> import tempfile
            >>> Dataset.from_dict({"a": [1, 2]}).to_csv(tempfile.mkdtemp() + "/a.csv")
            6
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._exports import export

        return export(dataset, path_or_buf, "csv", batch_size, storage_options, to_csv_kwargs)

    def to_json(
        self,
        path_or_buf: str | os.PathLike[str] | BinaryIO,
        batch_size: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **to_json_kwargs: Any,
    ) -> int:
        """Write the rows as JSON Lines (``lines=False``: one JSON array); return the bytes written.

        ``path_or_buf`` is a path, an fsspec URL or a file object opened in binary mode.

        Example:
            >>> import tempfile
            >>> Dataset.from_dict({"a": [1, 2]}).to_json(tempfile.mkdtemp() + "/a.jsonl")
            16
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._exports import export

        return export(dataset, path_or_buf, "json", batch_size, storage_options, to_json_kwargs)

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
        """Push to a Hub dataset repository as Parquet shards, in one commit; skip if unchanged.

        The Parquet files follow the dataset's shards
        (``<data_dir>/<split>-<rank>-<key>.parquet``: named by content, sorted in
        row order; through an indices mapping, a file per shard of the rows it
        selects), or the anchor's cut when ``num_shards`` or ``max_shard_size``
        is given, or when a mapping goes back to an earlier shard (a shuffle:
        its order is its content) (``<split>-XXXXX-of-YYYYY-<key>.parquet``); a
        file already on the Hub is not uploaded again. README.md has ``dataset_info`` and
        ``configs``, so ``datasets.load_dataset(repo_id)`` reads it; other
        configs and splits on the Hub are kept. The card also records the
        fingerprint and lineage. If it already records this fingerprint for
        ``config_name``/``split`` (same ``data_dir``, and same ``num_shards`` when
        given), no commit is made and the result says ``skipped``. Otherwise the
        missing files are written to temporary files one job at a time
        (``num_proc`` jobs in parallel, threads), pre-uploaded, and committed
        with the card and the deletion of the old files in ONE commit: readers
        never see a half-pushed split, and an interrupted push leaves the branch as it
        was (a retry finds the uploaded files on the Hub). A missing repository
        is created (``private``), but a missing ``revision`` is an error: create
        the branch first. ``embed_external_files`` has no effect (there are no
        media features). ``endpoint``: the Hub's address (default
        ``HF_ENDPOINT``, else huggingface.co).

        Returns:
            A `PushResult` (commit id and URL, or ``skipped=True``).

        Raises:
            InvalidRepoIdError: ``repo_id`` is malformed (nothing was sent).
            HubAuthError: the token is missing or refused.
            RevisionNotFoundError: ``revision`` does not exist.
            HubFeaturesMismatchError: the config's other splits have other features.

        Example:
            >>> from dagster_ds.testing import LocalHubServer
            >>> ds = Dataset.from_dict({"a": [1, 2]})
            >>> with LocalHubServer() as hub:
            ...     result = ds.push_to_hub("user/demo", num_shards=2, endpoint=hub.endpoint)
            >>> result.files
            ('data/train-00000-of-00002-....parquet', 'data/train-00001-of-00002-....parquet')
        """
        from dagster_ds.hub import PushTarget, push_dataset

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
        return push_dataset(_as_dataset(self), target, split, max_shard_size, num_shards, num_proc)

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

"""The Hugging Face Hub: push_to_hub and reading dataset repositories.

`Dataset.push_to_hub`, `DatasetDict.push_to_hub`, `IterableDataset.push_to_hub`
(streamed in bounded memory) and `IterableDatasetDict.push_to_hub` write Parquet
shards and a dataset card in the anchor's layout (``data/<split>-XXXXX-of-YYYYY.parquet``,
README.md with ``dataset_info`` and ``configs``), so ``datasets.load_dataset``
reads them back. Unlike the anchor, a push is one commit however many files it
has, a push of unchanged data (same fingerprint as recorded in the card) makes
no commit, and the card records each split's fingerprint and lineage.
`dagster_ds.load_dataset` reads Hub repositories (``load_dataset("user/name")``,
``streaming=True`` too).

The Hub endpoint is the ``endpoint=`` argument, else ``HF_ENDPOINT`` (read at
call time), else https://huggingface.co. For a loopback endpoint (the local Hub
of `dagster_ds.testing`), Xet and telemetry are switched off in the process.
Importing this package does not import ``huggingface_hub``.

Example:
    >>> from dagster_ds import Dataset, load_dataset
    >>> from dagster_ds.testing import LocalHubServer
    >>> with LocalHubServer() as hub:
    ...     ds = Dataset.from_dict({"text": ["a", "b"]})
    ...     first = ds.push_to_hub("user/demo", endpoint=hub.endpoint)
    ...     again = ds.push_to_hub("user/demo", endpoint=hub.endpoint)
    ...     back = load_dataset("user/demo", split="train", endpoint=hub.endpoint)
    >>> first.skipped, again.skipped, back["text"][:]
    (False, True, ['a', 'b'])
"""

from dagster_ds.hub._push import PushResult as PushResult

__all__ = ["PushResult"]

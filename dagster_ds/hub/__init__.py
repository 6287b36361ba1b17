"""The Hugging Face Hub: push_to_hub and reading dataset repositories.

`Dataset.push_to_hub`, `DatasetDict.push_to_hub`, `IterableDataset.push_to_hub`
(streamed in bounded memory) and `IterableDatasetDict.push_to_hub` write Parquet
files and a dataset card (README.md with ``dataset_info`` and ``configs``), so
``datasets.load_dataset`` reads them back. Unlike the anchor, the files follow the
dataset's shards and are named by content (``data/<split>-<rank>-<key>.parquet``),
so a push uploads only the shards that changed; a push is one commit however
many files it has, a push of unchanged data (same fingerprint as recorded in the
card) makes no commit, and the card records each split's fingerprint and lineage.
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

# Internal: for the other dagster_ds packages only; not public API.
from dagster_ds.hub._card import Card as Card
from dagster_ds.hub._client import LOCAL_HUB_TOKEN as LOCAL_HUB_TOKEN
from dagster_ds.hub._client import disable_xet_and_telemetry as disable_xet_and_telemetry
from dagster_ds.hub._client import is_valid_repo_id as is_valid_repo_id
from dagster_ds.hub._client import is_valid_repo_name as is_valid_repo_name
from dagster_ds.hub._load import looks_like_hub_id as looks_like_hub_id
from dagster_ds.hub._load import resolve_hub_dataset as resolve_hub_dataset
from dagster_ds.hub._push import PushResult as PushResult
from dagster_ds.hub._push import PushTarget as PushTarget
from dagster_ds.hub._sources import push_dataset as push_dataset
from dagster_ds.hub._sources import push_dataset_dict as push_dataset_dict
from dagster_ds.hub._sources import push_iterable as push_iterable

__all__ = ["PushResult"]

#: Names other dagster_ds packages import from here; not public API (may change).
__internal__ = [
    "LOCAL_HUB_TOKEN",
    "Card",
    "PushTarget",
    "disable_xet_and_telemetry",
    "is_valid_repo_id",
    "is_valid_repo_name",
    "looks_like_hub_id",
    "push_dataset",
    "push_dataset_dict",
    "push_iterable",
    "resolve_hub_dataset",
]

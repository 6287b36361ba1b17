"""What a materialization says about its version, to record that version again elsewhere.

A rollback (the same instance, later) and a promote (another instance) report a
materialization of a version that was computed before: they keep what
describes the version and drop what only its own run could say.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dagster_ds.orchestration._diff_summary import (
    COLUMNS_CHANGED,
    DIFF,
    ROWS_ADDED,
    ROWS_REMOVED,
    SECONDS_SAVED,
    SHARDS_NEW,
    SHARDS_REUSED,
)
from dagster_ds.orchestration._execution import CHANGED_KEY
from dagster_ds.orchestration.metadata import DatasetMetadataKey

__all__ = ["kept_metadata", "kept_tags"]

_DAGSTER_TAGS = (
    "dagster/data_version",
    "dagster/data_version_is_user_provided",
    "dagster/code_version",
)
_INPUT_VERSION = "dagster/input_data_version/"
_INPUT_EVENT = "dagster/input_event_pointer/"  # an event id: meaningful in its own instance
_RUN_ONLY = {
    CHANGED_KEY,
    # What the run changed against the version before it: not what this record changes.
    ROWS_ADDED,
    ROWS_REMOVED,
    COLUMNS_CHANGED,
    SHARDS_REUSED,
    SHARDS_NEW,
    SECONDS_SAVED,
    DIFF,
    DatasetMetadataKey.HUB_PUSH.value,
    DatasetMetadataKey.HUB_COMMIT.value,
    DatasetMetadataKey.HUB_URL.value,
}


def kept_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The version's description, without what only its own run said (why it ran, its push)."""
    return {name: value for name, value in metadata.items() if name not in _RUN_ONLY}


def kept_tags(tags: Mapping[str, str], *, same_instance: bool) -> dict[str, str]:
    """The data version, code version and input versions the version was made from.

    ``same_instance``: the materialization is recorded in the instance that made
    the version, so the pointers to its inputs' events are kept too.
    """
    prefixes = (_INPUT_VERSION, _INPUT_EVENT) if same_instance else (_INPUT_VERSION,)
    return {
        name: value
        for name, value in tags.items()
        if name in _DAGSTER_TAGS or name.startswith(prefixes)
    }

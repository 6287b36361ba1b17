"""The provenance tags of a step: which upstream materialization each input really was.

Dagster tags a materialization with ``dagster/input_data_version/<parent>`` and
``dagster/input_event_pointer/<parent>`` taken from the parent's *latest*
materialization when the step ends, even when the step read another one (its
own run's, while a concurrent run materialized the parent meanwhile). Staleness
is computed from these tags, so a wrong one is a silent error. The IO manager
remembers the record each input was loaded from, and the step records those as
its output's tags, which Dagster lets override its own.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping

import dagster as dg

_lock = threading.Lock()
_loaded: dict[int, tuple[weakref.ref[object], int]] = {}


def remember(dataset: object, storage_id: int) -> None:
    """Record that ``dataset`` was loaded from the event log record ``storage_id``."""
    with _lock:
        for key in [key for key, (ref, _) in _loaded.items() if ref() is None]:
            del _loaded[key]
        _loaded[id(dataset)] = (weakref.ref(dataset), storage_id)


def _storage_id(dataset: object) -> int | None:
    with _lock:
        found = _loaded.get(id(dataset))
    return found[1] if found is not None and found[0]() is dataset else None


def input_tags(inputs: Mapping[dg.AssetKey, tuple[object, str]]) -> dict[str, str]:
    """The provenance tags of inputs, given as ``{parent key: (dataset, its data version)}``.

    Inputs not loaded by a `DatasetIOManager` (no record remembered) are left to Dagster.
    """
    tags: dict[str, str] = {}
    for key, (dataset, data_version) in inputs.items():
        storage_id = _storage_id(dataset)
        if storage_id is None:
            continue
        name = key.to_user_string()
        tags[f"dagster/input_data_version/{name}"] = data_version
        tags[f"dagster/input_event_pointer/{name}"] = str(storage_id)
    return tags

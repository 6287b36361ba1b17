"""One resource object per class and configuration, so equal resources merge.

`dg.Definitions.merge`, and `dg.load_from_defs_folder` (which merges every
component's definitions), accept a resource key defined twice only when both
are the very same object: two equal ``DatasetIOManager()`` clash with
"different resources with same key 'io_manager'". `DatasetPipelineComponent`
builds its resources through `shared_resource`, and so does a project that
defines the same keys itself: equal resources are then one object and merge,
and resources that really differ (another store, another Hub) still clash.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping
from typing import Any, TypeVar

import dagster as dg

__all__ = ["shared_resource"]

Resource = TypeVar("Resource", bound=dg.ConfigurableResource | dg.ConfigurableIOManagerFactory)

_shared: dict[tuple[type, Hashable], Any] = {}
_lock = threading.Lock()


def shared_resource(resource: Resource) -> Resource:
    """The first resource of this class and configuration made in this process, else this one.

    Configuration is compared value by value and type by type: ``EnvVar("HF_TOKEN")``
    is not the literal string ``"HF_TOKEN"``.

    Args:
        resource: A configured resource.

    Returns:
        An equal resource: the same object for every call with an equal one.

    Example:
        >>> from dagster_ds.orchestration import DatasetIOManager
        >>> first = shared_resource(DatasetIOManager(base_dir="store"))
        >>> shared_resource(DatasetIOManager(base_dir="store")) is first
        True
        >>> shared_resource(DatasetIOManager(base_dir="elsewhere")) is first
        False
    """
    key = (type(resource), _frozen(resource.model_dump()))
    with _lock:
        return _shared.setdefault(key, resource)


def _frozen(value: Any) -> Hashable:
    """A hashable image of a configuration value that tells types apart."""
    if isinstance(value, Mapping):
        return ("mapping", tuple(sorted((repr(k), _frozen(v)) for k, v in value.items())))
    if isinstance(value, list | tuple):
        return ("sequence", tuple(_frozen(item) for item in value))
    return (type(value), repr(value))

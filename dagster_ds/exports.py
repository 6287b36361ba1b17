"""Names a package exports but imports at their first use (PEP 562 module ``__getattr__``).

A package lists them in a mapping, name to the module defining it, and takes its
``__getattr__`` and ``__dir__`` from `lazy_exports`: ``import dagster_ds`` then
costs only what a caller uses, and every name still imports as the same object.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, lazy: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, importing ``lazy``'s names on use.

    A name is imported from its module at its first use and kept in the package,
    so later uses are plain attribute reads.

    Example:
        >>> import json, sys, types
        >>> sys.modules["example_package"] = types.ModuleType("example_package")
        >>> __getattr__, __dir__ = lazy_exports("example_package", {"dumps": "json"})
        >>> __getattr__("dumps") is json.dumps
        True
    """
    namespace = vars(sys.modules[package])

    def __getattr__(name: str) -> Any:
        if name not in lazy:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(lazy[name]), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *lazy})

    return __getattr__, __dir__

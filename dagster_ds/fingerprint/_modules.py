"""Decide whether code is the user's own (hashed by value) or installed (by reference)."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import site
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Origin = Literal["user", "installed", "stdlib", "builtin"]


@dataclass(frozen=True)
class ModuleOrigin:
    """Where a module comes from, and the version that identifies installed code."""

    kind: Origin
    version: str = ""

    @property
    def by_value(self) -> bool:
        return self.kind == "user"


# dagster_ds is versioned library code even in an editable install: its classes
# (Features, say) are hashed by reference and version, not by their source.
_OWN_PACKAGE = "dagster_ds"


def _own_version() -> str:
    try:
        return importlib.metadata.version("dagster-ds")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _normalise(path: str) -> str:
    return os.path.normcase(os.path.realpath(path)) + os.sep


@functools.cache
def _installed_roots() -> tuple[str, ...]:
    paths = set(site.getsitepackages()) | {site.getusersitepackages()}
    for key in ("purelib", "platlib"):
        paths.add(sysconfig.get_paths()[key])
    return tuple(sorted(_normalise(p) for p in paths if p))


@functools.cache
def _stdlib_roots() -> tuple[str, ...]:
    paths = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib")}
    return tuple(sorted(_normalise(p) for p in paths if p))


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()


@functools.cache
def _package_version(module_name: str) -> str:
    """``dist==version`` of the distribution providing a module's top-level package.

    Most distributions are named like their package (pyarrow, numpy), so ask for
    that first; scanning every installed distribution's file list
    (`packages_distributions`) costs about a third of a second, once per process.
    """
    top_level = module_name.partition(".")[0]
    try:
        return f"{top_level}=={importlib.metadata.version(top_level)}"
    except importlib.metadata.PackageNotFoundError:
        pass
    versions: list[str] = []
    for dist in sorted(_distributions().get(top_level, [])):
        try:
            versions.append(f"{dist}=={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return ",".join(versions) or f"{top_level}==unknown"


@functools.cache
def module_origin(module_name: str) -> ModuleOrigin:
    """Classify a module by where its file lives.

    Code under site-packages is installed and identified by its distribution's
    version; the standard library by the Python version; compiled-in modules by
    name; everything else (``__main__``, the project's modules, editable
    installs) is the user's and is hashed by value.
    """
    module = sys.modules.get(module_name)
    if module is None or module_name == "__main__":
        return ModuleOrigin("user")
    if module_name.partition(".")[0] == _OWN_PACKAGE:
        return ModuleOrigin("installed", f"dagster-ds=={_own_version()}")
    file = getattr(module, "__file__", None)
    if not file:
        if hasattr(module, "__path__"):
            return ModuleOrigin("user")
        return ModuleOrigin("builtin", f"python=={sys.version_info[0]}.{sys.version_info[1]}")
    path = _normalise(file)
    if any(path.startswith(root) for root in _installed_roots()):
        return ModuleOrigin("installed", _package_version(module_name))
    if any(path.startswith(root) for root in _stdlib_roots()):
        return ModuleOrigin("stdlib", f"python=={sys.version_info[0]}.{sys.version_info[1]}")
    return ModuleOrigin("user")

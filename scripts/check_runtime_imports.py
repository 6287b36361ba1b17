"""Import every module of dagster_ds: run with the runtime dependencies only (CI's demo venv).

A module that imports a package the runtime dependencies do not install fails here,
by name. Optional extras (vision, audio, dask, torch) are imported by the modules
that need them at first use, so they do not count; the pytest plugin needs pytest.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import dagster_ds

NEEDS_PYTEST = {"dagster_ds.testing.pytest_plugin"}


def main() -> int:
    """Import each module; print those that fail and return 1 if any does."""
    failed = []
    for module in pkgutil.walk_packages(dagster_ds.__path__, "dagster_ds."):
        if module.name in NEEDS_PYTEST:
            continue
        try:
            importlib.import_module(module.name)
        except ImportError as error:
            failed.append(f"{module.name}: {error}")
    for line in failed:
        print(f"not importable with the runtime dependencies: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

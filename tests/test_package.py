"""The package's public surface and import cost."""

from __future__ import annotations

import types

import dagster_ds
from tests.conftest import RunPython


def _isort_key(name: str) -> tuple[int, str]:
    """Constants, then classes, then functions, as ruff's RUF022 orders ``__all__``."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_import_does_not_pull_in_dagster_the_hub_client_or_dask(run_python: RunPython) -> None:
    loaded = run_python(
        """
        import sys
        import dagster_ds
        heavy = ("dagster", "huggingface_hub", "datasets", "torch", "dask", "distributed")
        print(sorted(m for m in sys.modules if m.split(".")[0] in heavy))
        """
    )
    assert loaded == "[]"


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(dagster_ds).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert set(dagster_ds.__all__) == public
    assert list(dagster_ds.__all__) == sorted(dagster_ds.__all__, key=_isort_key)


def test_subpackage_all_is_sorted_and_complete() -> None:
    from dagster_ds import fingerprint

    public = {
        name
        for name, value in vars(fingerprint).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert set(fingerprint.__all__) == public
    assert list(fingerprint.__all__) == sorted(fingerprint.__all__, key=_isort_key)

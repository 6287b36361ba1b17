"""The orchestration package's public surface: exactly __all__, each name with an example."""

from __future__ import annotations

import types

import dagster_ds.orchestration as orchestration
from tests.conftest import RunPython
from tests.test_package import _isort_key


def test_all_lists_exactly_the_public_names_sorted() -> None:
    public = {
        name
        for name, value in vars(orchestration).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert set(orchestration.__all__) == public - set(orchestration.__internal__)
    assert list(orchestration.__all__) == sorted(orchestration.__all__, key=_isort_key)


def test_every_public_name_has_an_example() -> None:
    for name in orchestration.__all__:
        doc = getattr(orchestration, name).__doc__ or ""
        assert "Example:" in doc, name


def test_only_orchestration_imports_dagster(run_python: RunPython) -> None:
    loaded = run_python(
        """
        import sys
        import dagster_ds, dagster_ds.streaming, dagster_ds.load, dagster_ds.cache
        print("dagster" in sys.modules)
        import dagster_ds.orchestration
        print("dagster" in sys.modules)
        """,
        cold=True,
    )
    assert loaded.split() == ["False", "True"]

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
        """,
        cold=True,
    )
    assert loaded == "[]"


def test_reading_parquet_without_filters_does_not_load_pyarrow_dataset(
    run_python: RunPython,
) -> None:
    """``pyarrow.dataset`` loads pandas (~40 MB of memory): only ``filters=`` needs it."""
    loaded = run_python(
        """
        import sys, tempfile
        import pyarrow as pa, pyarrow.parquet as pq
        from dagster_ds import load_dataset
        path = tempfile.mkdtemp() + "/t.parquet"
        pq.write_table(pa.table({"id": list(range(100))}), path, row_group_size=10)
        streamed = load_dataset("parquet", data_files=path, split="train", streaming=True)
        loaded = load_dataset("parquet", data_files=path, split="train")
        assert sum(1 for _ in streamed) == len(loaded) == 100
        print("pyarrow.dataset" in sys.modules)
        filtered = load_dataset(
            "parquet", data_files=path, split="train", streaming=True, filters=[("id", "<", 5)]
        )
        assert [row["id"] for row in filtered] == [0, 1, 2, 3, 4]
        print("pyarrow.dataset" in sys.modules)
        """,
        cold=True,
    )
    assert loaded.split() == ["False", "True"]


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
    assert set(fingerprint.__all__) == public - set(fingerprint.__internal__)
    assert list(fingerprint.__all__) == sorted(fingerprint.__all__, key=_isort_key)

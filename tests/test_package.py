"""The package's public surface and import cost."""

from __future__ import annotations

import json
import types
from pathlib import Path

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


def test_a_cached_rerun_loads_only_what_it_uses(run_python: RunPython, tmp_path: Path) -> None:
    """A refresh whose splits and transforms are all cached, in a new process (as a
    scheduled run is): load JSON Lines files, a batched map, a filter. It loads neither
    the streaming engine, `DatasetDict`, combine and diff, nor the file readers and
    writers (the cache holds the rows), nor filelock (nothing is built), nor
    pyarrow.compute or pyarrow.parquet, nor anything of the Hub, Dagster or pandas."""
    for index in range(3):
        rows = (json.dumps({"id": index * 10 + row, "text": "x" * row}) for row in range(10))
        (tmp_path / f"part-{index}.jsonl").write_text("\n".join(rows) + "\n")
    pipeline = f"""
        import sys
        from dagster_ds import load_dataset
        dataset = load_dataset("json", data_files={str(tmp_path / "*.jsonl")!r}, split="train")
        mapped = dataset.map(lambda batch: {{"n": [len(t) for t in batch["text"]]}}, batched=True)
        kept = mapped.filter(lambda batch: [i % 3 != 0 for i in batch["id"]], batched=True)
        assert len(kept) == 20, len(kept)
        unused = {_NOT_LOADED_BY_A_RERUN!r}
        print(sorted(name for name in sys.modules if name in unused))
        """
    environment = {"DAGSTER_DS_CACHE": str(tmp_path / "cache")}
    run_python(pipeline, env=environment, cold=True)  # the first run fills the cache
    assert run_python(pipeline, env=environment, cold=True) == "[]"


# What a cached rerun of load_dataset -> map -> filter does without (see the test above).
_NOT_LOADED_BY_A_RERUN = (
    "dagster_ds.streaming",  # IterableDataset, concatenate/interleave_datasets
    "dagster_ds.combine",
    "dagster_ds.arrow._dict",  # DatasetDict
    "dagster_ds.arrow._combine",
    "dagster_ds.arrow._diff",
    "dagster_ds.formats._read",  # the readers of every format
    "dagster_ds.formats._json",
    "dagster_ds.formats._csv",
    "dagster_ds.formats._parquet",
    "dagster_ds.formats._write",  # the writers
    "filelock",  # locks are taken to build an entry, never to read one
    "tarfile",  # only to list the members of a .tar data file
    "pyarrow.compute",  # its import generates the compute functions (about 40 ms)
    "pyarrow.parquet",  # a JSON source and an Arrow cache need no Parquet
    "dagster_ds.hub",
    "huggingface_hub",
    "dagster",
    "pandas",
)


def test_names_imported_at_first_use_are_the_same_objects(run_python: RunPython) -> None:
    """``from dagster_ds import X`` and attribute access give the defining module's object,
    in a new process (the first use imports it), and ``__all__`` names all resolve."""
    printed = run_python(
        """
        import dagster_ds
        from dagster_ds import IterableDataset, DatasetDict, concatenate_datasets
        from dagster_ds.streaming import IterableDataset as defined
        from dagster_ds.arrow import diff_versions
        from dagster_ds.formats import iter_batches, write_batches
        assert IterableDataset is defined is dagster_ds.IterableDataset
        assert DatasetDict.__module__ == "dagster_ds.arrow._dict"
        assert all(getattr(dagster_ds, name) is not None for name in dagster_ds.__all__)
        assert set(dagster_ds.__all__) <= set(dir(dagster_ds))
        try:
            dagster_ds.no_such_name
        except AttributeError as error:
            print(error)
        """
    )
    assert printed == "module 'dagster_ds' has no attribute 'no_such_name'"


def test_reading_parquet_loads_neither_pyarrow_dataset_nor_other_formats_readers(
    run_python: RunPython,
) -> None:
    """``pyarrow.dataset`` loads pandas (~40 MB of memory): only ``filters=`` needs it. The
    readers of JSON, CSV and text (and what they import) load only for their formats."""
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
        others = ("csv", "json", "text")
        print([name for name in others if f"dagster_ds.formats._{name}" in sys.modules])
        print("pyarrow.dataset" in sys.modules)
        filtered = load_dataset(
            "parquet", data_files=path, split="train", streaming=True, filters=[("id", "<", 5)]
        )
        assert [row["id"] for row in filtered] == [0, 1, 2, 3, 4]
        print("pyarrow.dataset" in sys.modules)
        """,
        cold=True,
    )
    assert loaded.splitlines() == ["[]", "False", "True"]


def test_all_lists_exactly_the_public_names() -> None:
    """``dir`` lists the names imported at their first use too (``dir`` as ``vars`` would)."""
    public = {
        name
        for name in dir(dagster_ds)
        if not name.startswith("_") and not isinstance(getattr(dagster_ds, name), types.ModuleType)
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

"""The public names of dagster_ds.streaming, and every docstring example running."""

from __future__ import annotations

import doctest
import importlib
import inspect
import json
import pkgutil

import pyarrow as pa
import pytest

import dagster_ds
import dagster_ds.combine
import dagster_ds.streaming as streaming

MODULES = [
    "dagster_ds.combine",
    "dagster_ds.streaming",
    *(f"dagster_ds.streaming.{info.name}" for info in pkgutil.iter_modules(streaming.__path__)),
]


def test_all_is_sorted_and_exactly_the_public_names() -> None:
    for module in (streaming, dagster_ds.combine):
        assert module.__all__ == sorted(module.__all__)
        public = {
            name
            for name, value in vars(module).items()
            if not name.startswith("_")
            and not inspect.ismodule(value)
            and getattr(value, "__module__", module.__name__).startswith(module.__name__)
        }
        assert set(module.__all__) == public
    assert streaming.__all__ == ["IterableColumn", "IterableDataset", "IterableDatasetDict"]
    for name in (
        "IterableDataset",
        "IterableDatasetDict",
        "concatenate_datasets",
        "interleave_datasets",
    ):
        assert name in dagster_ds.__all__


def test_public_methods_are_documented_with_an_example() -> None:
    undocumented = [
        name
        for name, member in inspect.getmembers(streaming.IterableDataset)
        if not name.startswith("_")
        and (inspect.isfunction(member) or isinstance(member, property))
        and "Example" not in (inspect.getdoc(member) or "")
        and name not in ("split", "n_shards", "epoch")  # one-line properties
    ]
    assert undocumented == []


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_run(module: str) -> None:
    loaded = importlib.import_module(module)
    globs = {name: getattr(dagster_ds, name) for name in dagster_ds.__all__}
    globs |= {"pa": pa, "json": json}
    result = doctest.testmod(loaded, extraglobs=globs, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_to_iterable_dataset_example_runs() -> None:
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner()
    globs = {"Dataset": dagster_ds.Dataset}
    for test in finder.find(dagster_ds.Dataset.to_iterable_dataset, globs=globs):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0

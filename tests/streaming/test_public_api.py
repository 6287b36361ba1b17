"""The public names of dagster_ds.streaming and their documentation."""

from __future__ import annotations

import inspect

import dagster_ds
import dagster_ds.combine
import dagster_ds.streaming as streaming

# Every docstring example runs in tests/test_docs.py.


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
        assert set(module.__all__) == public - set(getattr(module, "__internal__", ()))
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

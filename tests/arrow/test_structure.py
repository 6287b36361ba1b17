"""The import structure of ``arrow/``: `Dataset` and `DatasetDict` are its facade, at the top.

The engine (shards, transforms run through the cache, loaded files) and the
``_dataset_*`` mixins call nothing up: no import of theirs, deferred ones
included, reaches ``_dataset`` or ``_dict``. (``tests/test_layers.py`` checks the
circles of the whole package.)
"""

from __future__ import annotations

from tests.test_layers import PACKAGE, Import, imports

_FACADE = {"dagster_ds.arrow._dataset", "dagster_ds.arrow._dict"}


def _arrow_imports() -> list[Import]:
    return [
        item
        for item in imports(PACKAGE)
        if item.importer.startswith("dagster_ds.arrow.")
        and item.target.startswith("dagster_ds.arrow.")
    ]


def test_only_the_facade_imports_the_facade() -> None:
    upward = [
        f"{item.importer}:{item.line} imports {item.target}"
        for item in _arrow_imports()
        if item.target in _FACADE and item.importer not in _FACADE and not item.typing_only
    ]
    assert upward == []

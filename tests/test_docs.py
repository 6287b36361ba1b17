"""Every docstring example in the package runs and shows what it says."""

from __future__ import annotations

import doctest
import importlib
import os
import pkgutil
from types import ModuleType

import pytest

import dagster_ds

_SKIP = ("dagster_ds.testing.pytest_plugin",)
# Examples may use any public name of these, as after ``from <package> import ...``.
_PACKAGES = (
    "dagster_ds",
    "dagster_ds.arrow",
    "dagster_ds.cache",
    "dagster_ds.features",
    "dagster_ds.fingerprint",
    "dagster_ds.formats",
    "dagster_ds.load",
    "dagster_ds.parallel",
    "dagster_ds.progress",
)


def _modules() -> list[str]:
    found = pkgutil.walk_packages(dagster_ds.__path__, prefix="dagster_ds.")
    names = [info.name for info in found if not info.name.startswith(_SKIP)]
    return sorted([dagster_ds.__name__, *names])


@pytest.mark.parametrize("name", _modules())
def test_examples_run(name: str, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    module: ModuleType = importlib.import_module(name)
    public: dict[str, object] = {}
    for package in _PACKAGES:
        exported = importlib.import_module(package)
        public.update({key: getattr(exported, key) for key in exported.__all__})
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    # Examples run as a user's script would: in __main__, with the environment restored after.
    globs = {**public, **vars(module), "__name__": "__main__"}
    environment = dict(os.environ)
    try:
        for test in finder.find(module, name, globs=globs):
            runner.run(test)
    finally:
        os.environ.clear()
        os.environ.update(environment)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, f"{results.failed} example(s) failed in {name}"

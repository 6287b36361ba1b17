from __future__ import annotations

import subprocess
import sys

import dagster_ds.formats as formats


def test_all_lists_exactly_the_public_names() -> None:
    # dir, not vars: the readers' and writers' names are imported at their first use.
    public = {
        name
        for name in dir(formats)
        if not name.startswith("_")
        and getattr(getattr(formats, name), "__module__", "").startswith("dagster_ds")
    }
    constants = {"DEFAULT_BATCH_SIZE", "FORMATS", "DataFiles", "Filters"}
    assert set(formats.__all__) == (public | constants) - set(formats.__internal__)
    assert len(formats.__all__) == len(set(formats.__all__))


def test_public_callables_are_documented_with_an_example() -> None:
    for name in formats.__all__:
        value = getattr(formats, name)
        if callable(value) and name not in {"DataFiles", "Filters"}:
            assert "Example:" in (value.__doc__ or ""), name


def test_importing_formats_imports_neither_datasets_nor_dagster() -> None:
    code = (
        "import sys, dagster_ds.formats; "
        "print(sorted(m for m in ('datasets', 'dagster', 'pandas') if m in sys.modules))"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert output.strip() == "[]"

"""Code locations for the commands that need definitions: loaded as ``dagster`` loads them.

``-w workspace.yaml`` (one code location), ``-m module`` or ``-f file.py``,
with ``-a`` (the `Definitions` object's name) and ``-d`` (where to import from);
with none of them, ``./workspace.yaml``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import yaml

if TYPE_CHECKING:
    import dagster as dg

_DEFAULT_WORKSPACE = "workspace.yaml"
_Command = TypeVar("_Command", bound=Callable[..., Any])


def code_location_options(command: _Command) -> _Command:
    """Give a command ``-w``, ``-m``, ``-f``, ``-a`` and ``-d``, as ``dagster`` has them."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


_OPTIONS = [
    click.option("-w", "--workspace", "workspace", default=None, help="A workspace.yaml file."),
    click.option("-m", "--module-name", "module", default=None, help="A module of definitions."),
    click.option("-f", "--python-file", "file", default=None, help="A Python file of definitions."),
    click.option(
        "-a",
        "--attribute",
        default=None,
        help="The Definitions object's name in the module or file.",
    ),
    click.option(
        "-d",
        "--working-directory",
        default=None,
        help="Where the module is imported from (default: the current folder).",
    ),
]


def load_definitions(
    workspace: str | None,
    module: str | None,
    file: str | None,
    attribute: str | None,
    working_directory: str | None,
) -> dg.Definitions:
    """The code location's definitions, found as the ``dagster`` command line finds them."""
    given = [name for name, value in (("-w", workspace), ("-m", module), ("-f", file)) if value]
    if len(given) > 1:
        raise click.UsageError(f"Give one of -w, -m and -f, not {' and '.join(given)}.")
    if not given:
        if not os.path.isfile(_DEFAULT_WORKSPACE):
            raise click.UsageError(
                "Give the code location: -w workspace.yaml, -m module or -f file.py (no"
                f" {_DEFAULT_WORKSPACE} in {os.getcwd()!r})."
            )
        workspace = _DEFAULT_WORKSPACE
    if workspace is not None:
        module, file, attribute, working_directory = _workspace_location(workspace)
    folder = os.path.abspath(working_directory or os.getcwd())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    found = _import(module, os.path.join(folder, file) if file else None)
    return _definitions(found, attribute, module or file or "")


def _workspace_location(path: str) -> tuple[str | None, str | None, str | None, str | None]:
    """(module, file, attribute, working directory) of a workspace file's one code location."""
    try:
        with open(path, encoding="utf-8") as stream:
            content = yaml.safe_load(stream) or {}
    except (OSError, yaml.YAMLError) as error:
        raise click.UsageError(f"Cannot read the workspace file {path!r}: {error}") from error
    locations = content.get("load_from") if isinstance(content, dict) else None
    if not isinstance(locations, list) or len(locations) != 1:
        count = len(locations) if isinstance(locations, list) else 0
        raise click.UsageError(
            f"The workspace file {path!r} has {count} code locations under 'load_from'; this"
            " command needs one: give it with -m module or -f file.py."
        )
    base = os.path.dirname(os.path.abspath(path))
    ((kind, target),) = dict(locations[0]).items()
    options: dict[str, Any] = target if isinstance(target, dict) else {}
    folder = options.get("working_directory")
    folder = os.path.join(base, folder) if folder is not None else base
    attribute = options.get("attribute")
    if kind in ("python_module", "python_package"):
        name = options.get("module_name" if kind == "python_module" else "package_name", target)
        return str(name), None, attribute, folder
    if kind == "python_file":
        relative = options.get("relative_path", target)
        return None, os.path.join(base, str(relative)), attribute, folder
    raise click.UsageError(
        f"The workspace file {path!r} loads its code location with {kind!r}; this command loads"
        " python_module, python_package and python_file locations."
    )


def _import(module: str | None, file: str | None) -> Any:
    try:
        if module is not None:
            return importlib.import_module(module)
        assert file is not None
        name = Path(file).stem
        spec = importlib.util.spec_from_file_location(name, file)
        if spec is None or spec.loader is None:
            raise ImportError(f"not a Python file: {file!r}")
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded
        spec.loader.exec_module(loaded)
        return loaded
    except (ImportError, OSError) as error:
        raise click.UsageError(
            f"Cannot load the code location {module or file!r}: {error}"
        ) from error


def _definitions(found: Any, attribute: str | None, where: str) -> dg.Definitions:
    """The module's `Definitions`: the one named ``attribute``, else its only one.

    A function decorated with ``@dg.definitions`` (taking no context) counts too,
    and is called, as ``dagster`` calls it.
    """
    if attribute is not None:
        value = _as_definitions(getattr(found, attribute, None))
        if value is None:
            kind = type(getattr(found, attribute, None)).__name__
            raise click.UsageError(f"{where!r} has no Definitions named {attribute!r} ({kind}).")
        return value
    candidates = {name: value for name, value in vars(found).items() if _is_definitions(value)}
    if len(candidates) != 1:
        raise click.UsageError(
            f"{where!r} defines {len(candidates)} Definitions objects"
            f" ({', '.join(sorted(candidates)) or 'none'}); name one with -a."
        )
    loaded = _as_definitions(next(iter(candidates.values())))
    assert loaded is not None
    return loaded


def _is_definitions(value: Any) -> bool:
    """A `Definitions`, or an ``@dg.definitions`` function (Dagster's lazy definitions)."""
    import dagster as dg

    lazy = callable(getattr(value, "load_fn", None)) and hasattr(value, "has_context_arg")
    return isinstance(value, dg.Definitions) or lazy


def _as_definitions(value: Any) -> dg.Definitions | None:
    import dagster as dg

    if not _is_definitions(value):
        return None
    if isinstance(value, dg.Definitions):
        return value
    if value.has_context_arg:
        raise click.UsageError(
            "An @dg.definitions function that takes a context is loaded by 'dg'; give a module"
            " whose Definitions object is built without one (-m, -f with -a)."
        )
    loaded = value()
    return loaded if isinstance(loaded, dg.Definitions) else None

"""Functions hash by value: code, globals, helpers, closures and defaults."""

from __future__ import annotations

import functools
import json
import textwrap
from pathlib import Path

import pytest

from dagster_ds.fingerprint import Hasher
from dagster_ds.fingerprint._modules import module_origin
from tests.conftest import RunPython

HELPERS = """
import re

WORD = re.compile(r"\\w+")

def clean(text):
    return " ".join(WORD.findall(text.lower()))

def unused(text):
    return text
"""

PIPELINE = """
import helpers
from helpers import clean

STOPWORDS = {"the", "a", "an"}

def tokenize(example):
    return {"tokens": [t for t in clean(example["text"]).split() if t not in STOPWORDS]}

def via_module(example):
    return {"text": helpers.clean(example["text"])}

class Scaler:
    factor = 2

    def __call__(self, example):
        return {"x": example["x"] * self.factor}
"""

PRINT_HASHES = """
import json, pipeline
from dagster_ds.fingerprint import Hasher
print(json.dumps({
    "tokenize": Hasher.hash(pipeline.tokenize),
    "via_module": Hasher.hash(pipeline.via_module),
    "scaler": Hasher.hash(pipeline.Scaler()),
    "seed": Hasher.hash(lambda example: {"length": len(example["text"])}),
}))
"""


def _project(folder: Path, helpers: str = HELPERS, pipeline: str = PIPELINE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "helpers.py").write_text(textwrap.dedent(helpers))
    (folder / "pipeline.py").write_text(textwrap.dedent(pipeline))
    return folder


def _hashes(run_python: RunPython, folder: Path, **kwargs: object) -> dict[str, str]:
    return json.loads(run_python(PRINT_HASHES, path=[folder], **kwargs))


def test_hashes_are_stable_across_processes_folders_seeds_and_working_directories(
    run_python: RunPython, tmp_path: Path
) -> None:
    first = _hashes(run_python, _project(tmp_path / "one"), env={"PYTHONHASHSEED": "1"})
    moved = _project(tmp_path / "elsewhere" / "two")
    second = _hashes(run_python, moved, env={"PYTHONHASHSEED": "2"}, cwd=tmp_path)
    assert first == second


def test_moving_a_function_to_other_lines_keeps_its_hash(
    run_python: RunPython, tmp_path: Path
) -> None:
    before = _hashes(run_python, _project(tmp_path / "before"))
    shifted = "\n# a comment\n\n\n" + PIPELINE.replace("def tokenize", "\n\n\ndef tokenize")
    after = _hashes(run_python, _project(tmp_path / "after", pipeline=shifted))
    assert before == after


def test_editing_an_imported_helper_changes_the_hash_in_a_new_process(
    run_python: RunPython, tmp_path: Path
) -> None:
    project = _project(tmp_path / "project")
    before = _hashes(run_python, project)
    (project / "helpers.py").write_text(HELPERS.replace("text.lower()", "text.casefold()"))
    after = _hashes(run_python, project)
    assert after["tokenize"] != before["tokenize"]
    assert after["via_module"] != before["via_module"]
    assert after["seed"] == before["seed"]


def test_editing_an_unused_helper_changes_nothing(run_python: RunPython, tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    before = _hashes(run_python, project)
    (project / "helpers.py").write_text(HELPERS.replace("return text\n", "return text * 2\n"))
    assert _hashes(run_python, project) == before


def test_editing_a_method_of_a_user_class_changes_the_instance_hash(
    run_python: RunPython, tmp_path: Path
) -> None:
    project = _project(tmp_path / "project")
    before = _hashes(run_python, project)
    (project / "pipeline.py").write_text(PIPELINE.replace('example["x"] *', 'example["x"] +'))
    after = _hashes(run_python, project)
    assert after["scaler"] != before["scaler"]
    assert after["tokenize"] == before["tokenize"]


def test_code_changes_change_the_hash() -> None:
    assert Hasher.hash(lambda x: x + 1) != Hasher.hash(lambda x: x + 2)
    assert Hasher.hash(lambda x: x + 1) != Hasher.hash(lambda y: y + 1)
    assert Hasher.hash(lambda x: x + 1) == Hasher.hash(lambda x: x + 1)


OFFSET = 1


def _add_offset(x: int) -> int:
    return x + OFFSET


def test_a_global_the_function_reads_is_part_of_its_hash() -> None:
    global OFFSET
    before = Hasher.hash(_add_offset)
    OFFSET = 2
    try:
        assert Hasher.hash(_add_offset) != before
    finally:
        OFFSET = 1
    assert Hasher.hash(_add_offset) == before


def test_closure_cells_defaults_and_keyword_defaults_are_part_of_the_hash() -> None:
    def make(step: int):
        def add(x: int, scale: int = 1, *, bias: int = 0) -> int:
            return x * scale + step + bias

        return add

    base = make(1)
    assert Hasher.hash(make(1)) == Hasher.hash(base)
    assert Hasher.hash(make(2)) != Hasher.hash(base)
    other_default = make(1)
    other_default.__defaults__ = (3,)
    assert Hasher.hash(other_default) != Hasher.hash(base)
    other_kwdefault = make(1)
    other_kwdefault.__kwdefaults__ = {"bias": 5}
    assert Hasher.hash(other_kwdefault) != Hasher.hash(base)


def test_partial_arguments_are_part_of_the_hash() -> None:
    def scale(x: int, factor: int) -> int:
        return x * factor

    assert Hasher.hash(functools.partial(scale, factor=2)) == Hasher.hash(
        functools.partial(scale, factor=2)
    )
    assert Hasher.hash(functools.partial(scale, factor=2)) != Hasher.hash(
        functools.partial(scale, factor=3)
    )


def test_recursive_and_mutually_recursive_functions_hash() -> None:
    def factorial(n: int) -> int:
        return 1 if n <= 1 else n * factorial(n - 1)

    assert Hasher.hash(factorial) == Hasher.hash(factorial)
    assert Hasher.hash(_is_even) != Hasher.hash(_is_odd)


def _is_even(n: int) -> bool:
    return n == 0 or _is_odd(n - 1)


def _is_odd(n: int) -> bool:
    return n != 0 and _is_even(n - 1)


def test_set_constants_in_code_are_stable_across_hash_seeds(run_python: RunPython) -> None:
    source = """
        from dagster_ds.fingerprint import Hasher
        print(Hasher.hash(lambda w: w in {"alpha", "beta", "gamma", "delta", "epsilon"}))
    """
    hashes = {run_python(source, env={"PYTHONHASHSEED": str(seed)}) for seed in (0, 1, 2, 3)}
    assert len(hashes) == 1


def test_installed_functions_hash_by_reference_not_by_code() -> None:
    before = Hasher.hash(textwrap.dedent)
    original = textwrap.dedent.__code__
    textwrap.dedent.__code__ = textwrap.indent.__code__
    try:
        assert Hasher.hash(textwrap.dedent) == before
    finally:
        textwrap.dedent.__code__ = original


def test_installed_packages_are_identified_by_their_version() -> None:
    import dill

    origin = module_origin("dill")
    assert origin.kind == "installed"
    assert f"dill=={dill.__version__}" in origin.version
    assert module_origin("json").kind == "stdlib"
    assert module_origin(__name__).kind == "user"


@pytest.mark.parametrize("name", ["tokenize", "via_module"])
def test_a_function_reading_an_undefined_global_still_hashes(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"def {name}(x):\n    return not_defined_yet(x)\n", namespace)
    before = Hasher.hash(namespace[name])
    namespace["not_defined_yet"] = len
    assert Hasher.hash(namespace[name]) != before


def test_an_abstract_base_class_of_the_users_hashes_by_its_code() -> None:
    import abc

    class Settings(abc.ABC):  # ABCMeta keeps an unpicklable cache in `_abc_impl`
        threshold = 2

        @abc.abstractmethod
        def limit(self) -> int: ...

    class Strict(Settings):
        def limit(self) -> int:
            return self.threshold

    before = Hasher.hash(Strict())
    issubclass(int, Settings)  # fills the ABC cache: the hash must not move
    assert Hasher.hash(Strict()) == before
    Strict.threshold = 3
    assert Hasher.hash(Strict()) != before


MODULE_ARGUMENT_RUN = """
import json

import helpers
from dagster_ds import Dataset


def flag(example, mod):
    return {"long": len(example["text"]) >= mod.MIN_LEN}


def make_flag(mod):
    def flag_with(example):
        return {"long": len(example["text"]) >= mod.MIN_LEN}

    return flag_with


ds = Dataset.from_dict({"text": ["ab", "abcd", "abcdef"]})
print(json.dumps({
    "argument": ds.map(flag, fn_kwargs={"mod": helpers})["long"][:],
    "closure": ds.map(make_flag(helpers))["long"][:],
}))
"""


def test_a_user_module_passed_to_map_is_hashed_by_value_across_processes(
    run_python: RunPython, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "helpers.py").write_text("MIN_LEN = 3\n")
    before = json.loads(run_python(MODULE_ARGUMENT_RUN, path=[project]))
    assert before == {"argument": [False, True, True], "closure": [False, True, True]}
    (project / "helpers.py").write_text("MIN_LEN = 5\n")
    after = json.loads(run_python(MODULE_ARGUMENT_RUN, path=[project]))
    assert after == {"argument": [False, False, True], "closure": [False, False, True]}


def test_a_user_module_hashes_by_every_name_it_defines_an_installed_one_by_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import types

    module = types.ModuleType("user_settings_module")
    module.MIN_LEN = 3  # type: ignore[attr-defined]
    before = Hasher.hash({"mod": module})
    module.MIN_LEN = 4  # type: ignore[attr-defined]
    changed = Hasher.hash({"mod": module})
    module.MIN_LEN = 3  # type: ignore[attr-defined]
    assert changed != before
    assert Hasher.hash({"mod": module}) == before
    module.__doc__ = "documentation is not behaviour"
    assert Hasher.hash({"mod": module}) == before
    installed = Hasher.hash(textwrap)
    monkeypatch.setattr(textwrap, "_whitespace", " ")
    assert Hasher.hash(textwrap) == installed


def test_user_modules_that_import_each_other_hash() -> None:
    import types

    first, second = types.ModuleType("user_cycle_a"), types.ModuleType("user_cycle_b")
    first.other, second.other = second, first  # type: ignore[attr-defined]
    first.value = 1  # type: ignore[attr-defined]
    before = Hasher.hash(first)
    second.value = 2  # type: ignore[attr-defined]
    assert Hasher.hash(first) != before

"""explain says which component differs between two hashes."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from click.testing import CliRunner

from dagster_ds.cli import main
from dagster_ds.fingerprint import Hasher, HashNode, describe_transform, explain

THRESHOLD = 3


def _long_words(text: str) -> list[str]:
    return [word for word in text.split() if len(word) > THRESHOLD]


def _paths(old: object, new: object) -> list[tuple[str, ...]]:
    return [difference.path for difference in explain(old, new).differences]


def test_describe_digest_equals_hash() -> None:
    for value in (_long_words, functools.partial(_long_words), {"a": 1}, [1, 2]):
        assert Hasher.describe(value).digest == Hasher.hash(value)


def test_explains_a_code_change() -> None:
    assert _paths(lambda x: x + 1, lambda x: x + 2) == [("code",)]


def test_explains_a_changed_global() -> None:
    global THRESHOLD
    before = Hasher.describe(_long_words)
    THRESHOLD = 4
    try:
        assert _paths(before, _long_words) == [("global 'THRESHOLD'",)]
    finally:
        THRESHOLD = 3


def test_explains_a_changed_closure_cell_and_default() -> None:
    def make(limit: int, default: int):
        def keep(x: int, floor: int = default) -> bool:
            return floor < x < limit

        return keep

    assert _paths(make(5, 0), make(6, 0)) == [("closure variable 'limit'",)]
    assert _paths(make(5, 0), make(5, 1)) == [("default 'floor'",)]


def test_explains_a_change_inside_a_helper_as_a_nested_path() -> None:
    namespace: dict[str, object] = {"__name__": "user_module"}
    exec("def helper(x):\n    return x * 2\n\ndef outer(x):\n    return helper(x) + 1\n", namespace)
    before = Hasher.describe(namespace["outer"])
    exec("def helper(x):\n    return x * 3\n", namespace)
    assert _paths(before, namespace["outer"]) == [("global 'helper'", "code")]
    assert str(explain(before, namespace["outer"])).endswith("global 'helper' → code: changed")


def test_explains_transform_arguments_and_parent() -> None:
    parent = "0" * 32
    base = describe_transform(parent, "map", {"function": _long_words, "batched": False})
    other_argument = describe_transform(parent, "map", {"function": _long_words, "batched": True})
    other_parent = describe_transform("1" * 32, "map", {"function": _long_words, "batched": False})
    added = describe_transform(parent, "map", {"function": _long_words, "batched": False, "x": 1})
    assert _paths(base, other_argument) == [("argument 'batched'",)]
    assert _paths(base, other_parent) == [("parent fingerprint",)]
    assert explain(base, added).differences[0].change == "added"


def test_no_difference_for_equal_hashes() -> None:
    explanation = explain(_long_words, _long_words)
    assert explanation.same
    assert explanation.differences == ()
    assert "unchanged" in str(explanation)


def test_trees_round_trip_through_json_and_explain_from_the_command_line(tmp_path: Path) -> None:
    old = describe_transform("0" * 32, "map", {"function": lambda x: x})
    new = describe_transform("0" * 32, "map", {"function": lambda x: [x]})
    assert HashNode.from_dict(json.loads(json.dumps(old.to_dict()))) == old
    (tmp_path / "old.json").write_text(json.dumps(old.to_dict()))
    (tmp_path / "new.json").write_text(json.dumps(new.to_dict()))
    result = CliRunner().invoke(
        main, ["hash", "explain", str(tmp_path / "old.json"), str(tmp_path / "new.json")]
    )
    assert result.exit_code == 0, result.output
    assert "argument 'function' → code: changed" in result.output


def test_explain_two_cached_results_by_fingerprint() -> None:
    from dagster_ds import Dataset

    ds = Dataset.from_dict({"a": [1, 2]})
    one = ds.map(lambda x: {"b": x["a"] + THRESHOLD})
    two = ds.map(lambda x: {"b": x["a"] * THRESHOLD})
    result = CliRunner().invoke(main, ["hash", "explain", one.fingerprint, two.fingerprint])
    assert result.exit_code == 0, result.output
    assert "argument 'function' → code: changed" in result.output
    missing = CliRunner().invoke(main, ["hash", "explain", "0" * 32, two.fingerprint])
    assert missing.exit_code != 0
    assert "dagster-ds cache ls" in missing.output


def test_explains_a_changed_attribute_of_a_module_argument() -> None:
    import types

    module = types.ModuleType("user_explained_module")
    module.MIN_LEN = 3  # type: ignore[attr-defined]
    module.clean = _long_words  # type: ignore[attr-defined]
    before = Hasher.describe(module)
    module.MIN_LEN = 4  # type: ignore[attr-defined]
    assert _paths(before, module) == [("attribute 'MIN_LEN'",)]

"""Hashing of plain values: format, order independence, special types, errors."""

from __future__ import annotations

import copy
import re
import socket
import sqlite3
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dagster_ds import UnhashableError
from dagster_ds.fingerprint import Hasher
from dagster_ds.fingerprint._hasher import _DigestWriter, _HashContext, _HashPickler  # pyright: ignore[reportPrivateUsage]

json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=5), children, max_size=5)
    ),
    max_leaves=20,
)


def test_digest_is_32_hexadecimal_characters() -> None:
    digest = Hasher.hash({"a": [1, 2, 3]})
    assert re.fullmatch(r"[0-9a-f]{32}", digest)


@given(json_like)
def test_equal_values_hash_equal_whatever_their_identity(value: object) -> None:
    assert Hasher.hash(value) == Hasher.hash(copy.deepcopy(value))


@given(st.dictionaries(st.text(max_size=8), st.integers(), min_size=2), st.randoms())
def test_dict_key_order_does_not_matter(mapping: dict[str, int], random: object) -> None:
    items = list(mapping.items())
    random.shuffle(items)  # type: ignore[attr-defined]
    assert Hasher.hash(mapping) == Hasher.hash(dict(items))


@given(st.sets(st.text(max_size=8) | st.integers(), min_size=2))
def test_set_element_order_does_not_matter(elements: set[object]) -> None:
    assert Hasher.hash(elements) == Hasher.hash(set(reversed(list(elements))))
    assert Hasher.hash(frozenset(elements)) == Hasher.hash(frozenset(sorted(elements, key=repr)))


def test_sets_of_mixed_unorderable_types_hash_in_a_stable_order() -> None:
    elements = [1, "a", (2, None), b"x", 3.5]
    assert Hasher.hash(set(elements)) == Hasher.hash(set(reversed(elements)))


def test_large_atomic_containers_take_the_fast_path_consistently() -> None:
    big = {str(i): i for i in range(10_000)}
    assert Hasher.hash(big) == Hasher.hash(dict(reversed(list(big.items()))))
    assert Hasher.hash(big) != Hasher.hash({**big, "0": -1})
    assert Hasher.hash(list(range(100))) != Hasher.hash(tuple(range(100)))


def test_values_that_differ_hash_differently() -> None:
    values = [0, 1, True, 1.0, "1", b"1", None, [1], (1,), {1}, {"1": 1}, OrderedDict(a=1)]
    assert len({Hasher.hash(v) for v in values}) == len(values)


def test_strings_are_not_memoised_so_identity_never_shows() -> None:
    word = "repeated-" + "x" * 5
    assert Hasher.hash([word, word]) == Hasher.hash([word, "".join(["repeated-", "x" * 5])])


def test_self_referencing_containers_hash() -> None:
    looped: list[object] = [1]
    looped.append(looped)
    assert Hasher.hash(looped) == Hasher.hash(looped)


def test_numpy_arrays_hash_by_dtype_shape_and_bytes() -> None:
    array = np.arange(12, dtype=np.int64).reshape(3, 4)
    assert Hasher.hash(array) == Hasher.hash(array.copy())
    assert Hasher.hash(array.T) == Hasher.hash(np.ascontiguousarray(array.T))
    assert Hasher.hash(array) != Hasher.hash(array.reshape(4, 3))
    assert Hasher.hash(array) != Hasher.hash(array.astype(np.int32))
    assert Hasher.hash(array) != Hasher.hash(array + 1)


def test_compiled_regexes_hash_by_pattern_and_flags() -> None:
    assert Hasher.hash(re.compile(r"\w+")) == Hasher.hash(re.compile(r"\w+"))
    assert Hasher.hash(re.compile(r"\w+")) != Hasher.hash(re.compile(r"\w+", re.IGNORECASE))
    assert Hasher.hash(re.compile(r"\w+")) != Hasher.hash(re.compile(r"\w*"))


def test_paths_and_objects_of_installed_classes_hash_by_state() -> None:
    assert Hasher.hash(Path("/a/b")) == Hasher.hash(Path("/a") / "b")
    assert Hasher.hash(Path("/a/b")) != Hasher.hash(Path("/a/c"))


def test_incremental_hasher_depends_on_every_update_and_their_order() -> None:
    first, second, third = Hasher(), Hasher(), Hasher()
    first.update("a")
    first.update([1])
    second.update("a")
    second.update([1])
    third.update([1])
    third.update("a")
    assert first.hexdigest() == second.hexdigest() != third.hexdigest()


def test_unpicklable_value_names_the_culprit() -> None:
    connection = sqlite3.connect(":memory:")
    try:
        with pytest.raises(UnhashableError, match=r"key 'db' of <dict>: cannot pickle"):
            Hasher.hash({"db": connection, "n": 1})
    finally:
        connection.close()


def test_unpicklable_attribute_of_a_global_is_located() -> None:
    class Tokenizer:
        def __init__(self) -> None:
            self.vocab = {"a": 1}
            self.sock = socket.socket()

    tokenizer = Tokenizer()

    def lookup(word: str) -> int:
        return tokenizer.vocab[word]

    try:
        with pytest.raises(UnhashableError) as raised:
            Hasher.hash(lookup)
    finally:
        tokenizer.sock.close()
    message = str(raised.value)
    assert message.startswith("attribute 'sock' of closure variable 'tokenizer' of <function "), (
        message
    )
    assert "cannot pickle 'socket' object" in message
    assert isinstance(raised.value, TypeError)


@given(st.text(max_size=300) | st.text(alphabet=st.characters(codec="utf-8"), min_size=250))
def test_a_string_hashes_as_its_pickled_bytes_do(text: str) -> None:
    """Strings take a short cut past the pickler (one per source file of a load): same digest."""
    writer = _DigestWriter()
    _HashPickler(writer, _HashContext()).dump(text)
    assert Hasher.hash(text) == writer.state.hexdigest()

"""Hashing torch values: tensors by content, `torch.compile`d functions and modules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dagster_ds.fingerprint import Hasher

torch = pytest.importorskip("torch")
# torch.compile imports torch's own deprecated jit helpers (inductor), which warn.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning"
)


def _step(edited: bool) -> Callable[[Any], Any]:
    """The same function (name and all), as written and after an edit of its body."""
    if edited:

        def step(x: Any) -> Any:
            return x + 2

    else:

        def step(x: Any) -> Any:
            return x + 1

    return step


class _Scale(torch.nn.Module):
    def __init__(self, seed: int) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.linear = torch.nn.Linear(3, 2)

    def forward(self, x: Any) -> Any:
        return self.linear(x) * 2


class _Shift(_Scale):
    def forward(self, x: Any) -> Any:
        return self.linear(x) + 2


def test_compiled_copies_of_a_function_hash_equal_and_an_edited_one_differently() -> None:
    first, second = torch.compile(_step(False)), torch.compile(_step(False))
    assert first is not second
    assert Hasher.hash(first) == Hasher.hash(second)
    assert Hasher.hash(torch.compile(_step(True))) != Hasher.hash(first)


def test_compiled_copies_of_a_module_hash_equal_and_other_weights_or_code_differently() -> None:
    first, second = torch.compile(_Scale(0)), torch.compile(_Scale(0))
    assert Hasher.hash(first) == Hasher.hash(second)
    assert Hasher.hash(_Scale(0)) == Hasher.hash(_Scale(0))
    assert Hasher.hash(torch.compile(_Scale(1))) != Hasher.hash(first)  # other weights
    assert Hasher.hash(torch.compile(_Shift(0))) != Hasher.hash(first)  # other forward


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "bool"])
def test_tensors_hash_by_dtype_shape_and_values(dtype: str) -> None:
    kind = getattr(torch, dtype)
    values = torch.arange(6).reshape(2, 3).to(kind)
    assert Hasher.hash(values) == Hasher.hash(values.clone())
    assert Hasher.hash(values) != Hasher.hash(values.reshape(3, 2))
    assert Hasher.hash(values) != Hasher.hash(torch.zeros(2, 3, dtype=kind))
    assert Hasher.hash(values.t()) == Hasher.hash(values.t().contiguous())

"""What a map returns, turned into Arrow: values that do not fit get a clear error."""

from __future__ import annotations

from typing import Any

import pytest

from dagster_ds import Dataset, IterableDataset
from dagster_ds.errors import TransformOutputError


@pytest.mark.parametrize("batched", [False, True])
def test_an_integer_beyond_64_bits_names_the_column_and_the_examples(batched: bool) -> None:
    def huge(example: dict[str, Any]) -> dict[str, Any]:
        if batched:
            return {"big": [2**70 for _ in example["a"]]}
        return {"big": 2**70}

    source = {"a": [1, 2, 3]}
    with pytest.raises(TransformOutputError, match=r"'big'.*too large for 64 bits"):
        Dataset.from_dict(source).map(huge, batched=batched)
    with pytest.raises(TransformOutputError, match=r"'big'.*too large for 64 bits"):
        list(IterableDataset.from_dict(source).map(huge, batched=batched))

"""The same features built with dagster_ds and with `datasets`, for differential tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import datasets as hf

from dagster_ds import features as ds

DTYPES = [
    "null",
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "string",
    "large_string",
    "binary",
    "large_binary",
    "date32",
    "date64",
    "time32[s]",
    "time32[ms]",
    "time64[us]",
    "time64[ns]",
    "timestamp[s]",
    "timestamp[ms]",
    "timestamp[us]",
    "timestamp[ns]",
    "timestamp[us, tz=UTC]",
    "timestamp[ns, tz=Europe/Paris]",
    "duration[s]",
    "duration[ms]",
    "duration[us]",
    "duration[ns]",
    "decimal128(10, 2)",
    "decimal128(4, -2)",
    "decimal256(40, 6)",
    "string_view",
    "binary_view",
    "fixed_size_binary[16]",
]


def _both(build: Callable[[Any], Any]) -> tuple[Any, Any]:
    return build(ds), build(hf)


def _nested(m: Any) -> dict[str, Any]:
    return {
        "text": m.Value("string"),
        "label": m.ClassLabel(names=["neg", "pos"]),
        "counts": m.ClassLabel(num_classes=3),
        "tokens": m.Sequence(m.Value("string")),
        "answers": m.Sequence({"text": m.Value("string"), "start": m.Value("int32")}),
        "pairs": m.Sequence({"ids": m.List(m.Value("int64"))}),
        "fixed": m.Sequence(m.Value("float32"), length=3),
        "embedding": m.List(m.Value("float32"), length=4),
        "big": m.LargeList(m.Value("int64")),
        "meta": {"source": m.Value("string"), "when": {"at": m.Value("timestamp[ms, tz=UTC]")}},
        "spans": m.List(
            {"start": m.Value("int32"), "tags": m.List(m.ClassLabel(names=["a", "b"]))}
        ),
        "grid": m.List(m.List(m.Value("int8"), length=2)),
        "blob": m.Json(),
        "with_id": m.Value("int16", id="my-id"),
    }


def feature_cases() -> list[tuple[str, Any, Any]]:
    """(test id, our Features, the anchor's Features), over a broad set of features."""
    cases = [
        (f"value-{dtype}", *_both(lambda m, d=dtype: m.Features({"x": m.Value(d)})))
        for dtype in DTYPES
    ]
    cases.append(("nested", *_both(lambda m: m.Features(_nested(m)))))
    cases.append(("float-alias", *_both(lambda m: m.Features({"x": m.Value("float")}))))
    cases.append(("double-alias", *_both(lambda m: m.Features({"x": m.Value("double")}))))
    cases.append(("json-no-decode", *_both(lambda m: m.Features({"x": m.Json(decode=False)}))))
    cases.append(("empty", *_both(lambda m: m.Features({}))))
    return cases

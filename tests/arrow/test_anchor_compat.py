"""What a `datasets` user sees after changing one import (issue 28), against `datasets`.

Each case runs the same code on both libraries in this process and compares what comes
back; where we differ on purpose, the test asserts our documented behaviour instead.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest

import dagster_ds
from dagster_ds.errors import AnchorDifferenceWarning

DATA: dict[str, list[Any]] = {"a": [1, 2, 3], "s": ["x", "y", "x"]}


def _doubled(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {"a2": [value * 2 for value in batch["a"]]}


def _format_restored(module: ModuleType) -> tuple[Any, Any]:
    source = module.Dataset.from_dict(DATA).with_transform(_doubled)
    target = module.Dataset.from_dict(DATA)
    target.set_format(**source.format)
    return target.format["type"], target[0]


def _dict_format(module: ModuleType) -> dict[str, Any]:
    splits = module.DatasetDict({"train": module.Dataset.from_dict(DATA)})
    splits.set_format("numpy", columns=["a"])
    return splits["train"].format


CASES: dict[str, Callable[[ModuleType], Any]] = {
    "format of a transform restored": _format_restored,
    "with_format custom": lambda m: m.Dataset.from_dict(DATA).with_format(
        "custom", transform=_doubled
    )[1],
    "format columns default": lambda m: m.Dataset.from_dict(DATA).with_format("numpy").format,
    "format columns given": lambda m: (
        m.Dataset.from_dict(DATA).with_format("numpy", columns=["a"]).format
    ),
    "DatasetDict format columns": _dict_format,
}


def _bool_classes(module: ModuleType) -> tuple[list[str], list[Any]]:
    encoded = module.Dataset.from_dict({"b": [True, False, None, True]}).class_encode_column("b")
    return encoded.features["b"].names, encoded["b"][:]


CASES.update(
    {
        "class_encode bools": _bool_classes,
        "repeat None": lambda m: _raised(lambda: m.Dataset.from_dict(DATA).repeat(None)),
    }
)


def _raised(call: Callable[[], Any]) -> tuple[type[BaseException], ...]:
    """The builtin exception classes ``call`` raises (ours also carry dagster_ds's)."""
    try:
        call()
    except Exception as error:  # any error is the answer
        return tuple(kind for kind in (ValueError, KeyError, TypeError) if isinstance(error, kind))
    return ()


@pytest.mark.parametrize(
    ("call", "phrase"),
    [
        (
            lambda m: list(
                m.Dataset.from_dict(DATA)
                .to_iterable_dataset()
                .map(lambda b: {"a": [*b["a"], 4]}, batched=True)
            ),
            "Column lengths mismatch",
        ),
        (
            lambda m: m.concatenate_datasets(
                [m.Dataset.from_dict(DATA), m.Dataset.from_dict(DATA)], axis=1
            ),
            "duplicated",
        ),
        (
            lambda m: m.concatenate_datasets(
                [
                    m.Dataset.from_dict(DATA).to_iterable_dataset(),
                    m.Dataset.from_dict(DATA).to_iterable_dataset(),
                ],
                axis=1,
            ),
            "duplicated",
        ),
        (
            lambda m: (
                m.Dataset.from_dict({"l": [0] * 10 + [1]})
                .class_encode_column("l")
                .train_test_split(test_size=0.2, stratify_by_column="l", seed=0)
            ),
            "least populated class",
        ),
        (
            lambda m: (
                m.Dataset.from_dict({"l": [0, 0, 1, 1, 2, 2]})
                .class_encode_column("l")
                .train_test_split(test_size=2, stratify_by_column="l", seed=0)
            ),
            "greater or equal to the number of classes",
        ),
        (lambda m: m.Dataset.from_dict(DATA).repeat(None), "indefinite repetition"),
    ],
)
def test_errors_carry_the_anchors_phrase(
    datasets: ModuleType, call: Callable[[ModuleType], Any], phrase: str
) -> None:
    """Migrating code matches errors with ``pytest.raises(ValueError, match=...)``."""
    with pytest.raises(ValueError, match=phrase):
        call(datasets)
    with pytest.raises(ValueError, match=phrase):
        call(dagster_ds)


@pytest.mark.parametrize(
    "function", [lambda b: {"a": [*b["a"], 4]}, lambda b: {"n": [1], "m": [1, 2]}]
)
def test_a_batched_map_of_the_wrong_length_says_column_lengths_mismatch(
    function: Callable[[dict[str, Any]], Any],
) -> None:
    """The anchor's streaming phrase; its map-style one (an `ArrowInvalid`) names no phrase."""
    with pytest.raises(ValueError, match="Column lengths mismatch"):
        dagster_ds.Dataset.from_dict(DATA).map(function, batched=True)


@pytest.mark.parametrize(
    "make",
    [
        lambda torch, b: {"t": [torch.ones(2, dtype=torch.float32) for _ in b["a"]]},
        lambda torch, b: {"t": torch.ones((len(b["a"]), 2, 2), dtype=torch.float32)},
        lambda torch, b: {"t": [torch.tensor(1.5, dtype=torch.float32) for _ in b["a"]]},
        lambda torch, b: {"t": [torch.ones((2, 2), dtype=torch.int8) for _ in b["a"]]},
    ],
)
def test_map_keeps_the_dtype_of_tensors(
    datasets: ModuleType, make: Callable[[Any, dict[str, Any]], Any]
) -> None:
    torch = pytest.importorskip("torch")

    def typed(module: ModuleType) -> str:
        mapped = module.Dataset.from_dict(DATA).map(lambda b: make(torch, b), batched=True)
        return str(mapped.features["t"])

    assert typed(dagster_ds) == typed(datasets)


def _rows() -> Iterator[dict[str, Any]]:
    yield from ({"a": str(i), "f": i + 0.5, "s": f"r{i}"} for i in range(3))


CAST = {"a": ("int64",), "f": ("float32",), "s": ("string",)}


def _generated(module: ModuleType, **kwargs: Any) -> Any:
    features = module.Features({name: module.Value(*args) for name, args in CAST.items()})
    return module.Dataset.from_generator(_rows, features=features, **kwargs)


CASES.update(
    {
        "from_generator casts to the features": lambda m: (
            _generated(m).to_dict(),
            str(_generated(m).features),
        ),
        "from_generator split": lambda m: (
            str(_generated(m, split="test").split),
            str(_generated(m).split),
        ),
        "from_generator fingerprint": lambda m: (
            _generated(m, fingerprint="0123456789abcdef0123456789abcdef")._fingerprint
        ),
        "from_generator keep_in_memory": lambda m: (
            _generated(m, keep_in_memory=True, num_proc=1).cache_files,
            _generated(m, keep_in_memory=True).to_dict(),
        ),
    }
)


def test_from_generator_refuses_a_value_that_does_not_cast(datasets: ModuleType) -> None:
    def rows() -> Iterator[dict[str, Any]]:
        yield {"a": "x"}

    features = {"a": "int64"}
    with pytest.raises(Exception, match="generating the dataset"):
        datasets.Dataset.from_generator(
            rows, features=datasets.Features({k: datasets.Value(v) for k, v in features.items()})
        )
    with pytest.raises(dagster_ds.CastError, match="'x'"):
        dagster_ds.Dataset.from_generator(
            rows,
            features=dagster_ds.Features({k: dagster_ds.Value(v) for k, v in features.items()}),
        )


@pytest.mark.parametrize("kind", ["csv", "json", "parquet", "text"])
@pytest.mark.parametrize("splits", [False, True])
def test_keep_in_memory_reads_the_rows_into_memory(
    datasets: ModuleType, tmp_path: Path, kind: str, splits: bool
) -> None:
    path = tmp_path / f"data.{kind}"
    rows = dagster_ds.Dataset.from_dict({"text": [f"line {i}" for i in range(2000)]})
    if kind == "text":
        path.write_text("".join(f"{text}\n" for text in rows["text"]))
    else:
        getattr(rows, f"to_{kind}")(str(path))

    def load(module: ModuleType, keep_in_memory: bool) -> Any:
        owner = module.DatasetDict if splits else module.Dataset
        source: Any = {"train": str(path)} if splits else str(path)
        loaded = getattr(owner, f"from_{kind}")(source, keep_in_memory=keep_in_memory)
        return loaded["train"] if splits else loaded

    for module in (datasets, dagster_ds):
        gc.collect()  # what earlier tests left is freed now, not while we measure
        before = pa.total_allocated_bytes()
        mapped = load(module, keep_in_memory=False)
        after_mapped = pa.total_allocated_bytes()
        in_memory = load(module, keep_in_memory=True)
        after_memory = pa.total_allocated_bytes()
        size = in_memory.data.nbytes
        # Memory-mapped, the rows stay on disk; kept in memory, Arrow holds them (bounds,
        # not equalities: other allocations of the process may come and go meanwhile).
        assert after_mapped - before < size / 2
        assert after_memory - after_mapped >= size * 0.9
        assert in_memory.cache_files == []
        assert in_memory.to_dict() == mapped.to_dict()
        if module is dagster_ds:
            assert in_memory.fingerprint == mapped.fingerprint
        del mapped, in_memory  # freed now, not while the next module is measured


JSON_VALUES = [{"a": 1}, {"a": {"b": {"c": 1}}, "d": [2, {"e": 3}]}, None, [1, {"a": 2}]]


def _json_dataset(module: ModuleType) -> Any:
    features = module.Features(
        {"j": module.Json(), "l": module.List(module.Json()), "s": {"k": module.Json()}}
    )
    columns = {
        "j": JSON_VALUES,
        "l": [[value] for value in JSON_VALUES],
        "s": [{"k": value} for value in JSON_VALUES],
    }
    return module.Dataset.from_dict(columns, features=features)


CASES.update(
    {
        "Json to_list": lambda m: _json_dataset(m).to_list(),
        "Json to_dict": lambda m: _json_dataset(m).to_dict(),
        "Json to_dict batched": lambda m: list(
            _json_dataset(m).to_dict(batch_size=3, batched=True)
        ),
        "Json to_pandas": lambda m: _json_dataset(m).to_pandas().to_dict("list"),
        "Json rows": lambda m: [_json_dataset(m)[i] for i in range(4)],
        "Json column": lambda m: _json_dataset(m)["j"][:],
    }
)


def _label_storage(module: ModuleType) -> list[Any]:
    label = module.ClassLabel(names=["neg", "pos"])
    arrays = [pa.array(["pos", None, "neg"]), pa.array([0, 1]), pa.array(["1"])]
    return [label.cast_storage(array).to_pylist() for array in arrays]


CASES.update(
    {
        "ClassLabel.cast_storage": _label_storage,
        "ClassLabel.cast_storage refuses": lambda m: [
            _raised(functools.partial(m.ClassLabel(names=["neg"]).cast_storage, array))
            for array in (pa.array([3]), pa.array(["nope"]))
        ],
    }
)


CASES.update(
    {
        "map returning {} for every example": lambda m: (
            m.Dataset.from_dict(DATA).map(lambda example: {}).to_dict()
        ),
        "map returning the mutated example without a removed column": lambda m: (
            m.Dataset.from_dict(DATA)
            .map(lambda example: {**example, "n": 1}, remove_columns=["s"])
            .to_dict()
        ),
    }
)


RUNS: dict[str, list[Any]] = {"k": [1, 1, 2, 2, 2, 3, 3, 3, 3, 3], "v": list(range(10))}

CASES.update(
    {
        "batch by_column": lambda m: m.Dataset.from_dict(RUNS).batch(by_column="k").to_dict(),
        "batch by_column, batch_size": lambda m: m.Dataset.from_dict(RUNS).batch(3, "k").to_dict(),
        "batch by_column, drop_last_batch": lambda m: [
            m.Dataset.from_dict(RUNS).batch(size, by_column="k", drop_last_batch=True).to_dict()
            for size in (3, 4, 5)
        ],
        "batch by_columns": lambda m: (
            m.Dataset.from_dict(RUNS).batch(4, by_column=["k", "v"]).to_dict()
        ),
        "batch by_column keeps the format": lambda m: (
            m.Dataset.from_dict(RUNS).with_format("numpy").batch(by_column="k").format["type"]
        ),
        "batch by_column of no rows": lambda m: (
            m.Dataset.from_dict({"k": [], "v": []}).batch(2, by_column="k").to_dict()
        ),
        "batch by_column of selected rows": lambda m: (
            m.Dataset.from_dict(RUNS).select([9, 8, 0, 1, 2]).batch(by_column="k").to_dict()
        ),
        "batch without a size": lambda m: _raised(lambda: m.Dataset.from_dict(RUNS).batch()),
    }
)


def test_batch_by_column_runs_cross_data_files(datasets: ModuleType, tmp_path: Path) -> None:
    """A run split over two files is one batch; the result is cached under its fingerprint."""
    files = [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")]
    dagster_ds.Dataset.from_dict({"k": [1, 2, 2], "v": [0, 1, 2]}).to_parquet(files[0])
    dagster_ds.Dataset.from_dict({"k": [2, 3], "v": [3, 4]}).to_parquet(files[1])
    ours = dagster_ds.Dataset.from_parquet(files, shard_bytes=0)
    assert len(ours.cache_files) == 2  # two shards
    batched = ours.batch(by_column="k")
    expected = datasets.Dataset.from_parquet(files).batch(by_column="k")
    assert batched.to_dict() == expected.to_dict()
    again = dagster_ds.Dataset.from_parquet(files, shard_bytes=0).batch(by_column="k")
    assert again.fingerprint == batched.fingerprint
    assert again.cache_files == batched.cache_files
    assert ours.batch(by_column="v").fingerprint != batched.fingerprint


def test_batch_by_column_keeps_a_run_of_nulls_and_says_so() -> None:
    """Where we differ: the anchor merges nulls with both neighbours (`[1, None, 2]` is one run)."""
    dataset = dagster_ds.Dataset.from_dict({"k": [1, None, None, 2]})
    with pytest.warns(AnchorDifferenceWarning, match="run of nulls"):
        batched = dataset.batch(by_column="k")
    assert batched["k"][:] == [[1], [None, None], [2]]


def _added(module: ModuleType, columns: dict[str, list[Any]], item: dict[str, Any]) -> Any:
    added = module.Dataset.from_dict(columns).add_item(item)
    return str(added.features), added.to_dict()


NULLS: dict[str, list[Any]] = {"a": [1, 2], "n": [None, None], "l": [[None], []]}

CASES.update(
    {
        "add_item widens a null column": lambda m: _added(m, NULLS, {"a": 3, "n": "x", "l": []}),
        "add_item widens a list of nulls": lambda m: _added(m, NULLS, {"a": 3, "l": [1.5]}),
        "add_item adds a column": lambda m: _added(m, DATA, {"a": 4, "s": "z", "new": 1.5}),
        "add_item of a missing key": lambda m: _added(m, DATA, {"a": 4}),
        "add_item casts to the dataset's type": lambda m: _added(m, DATA, {"a": 4.0, "s": None}),
        "add_item refuses a lossy cast": lambda m: _raised(
            lambda: m.Dataset.from_dict(DATA).add_item({"a": 2.5})
        ),
        "add_item keeps the format": lambda m: (
            m.Dataset.from_dict(DATA).with_format("numpy").add_item({"b": 1}).format
        ),
        "add_item after select": lambda m: (
            m.Dataset.from_dict(DATA).select([2, 0]).add_item({"a": 9, "s": "q"}).to_dict()
        ),
    }
)


def _described(module: ModuleType, text: str, license: str = "l1", **columns: list[Any]) -> Any:
    info = module.DatasetInfo(description=text, citation=f"c-{text}", license=license)
    return module.Dataset.from_dict(columns or {"a": [1, 2]}, info=info).with_format("numpy")


def _prose(dataset: Any) -> tuple[str, str, str, str]:
    info = dataset.info
    return info.description, info.citation, info.homepage, info.license


CASES.update(
    {
        "concatenate keeps the common format": lambda m: (
            m.concatenate_datasets([_described(m, "x"), _described(m, "y")]).format
        ),
        "concatenate of other formats has none": lambda m: (
            m.concatenate_datasets(
                [_described(m, "x"), _described(m, "y").with_format("pandas")]
            ).format
        ),
        "concatenate side by side": lambda m: (
            m.concatenate_datasets(
                [_described(m, "x"), _described(m, "y", b=[3, 4])], axis=1
            ).format
        ),
        "concatenate merges the info": lambda m: [
            _prose(m.concatenate_datasets(parts))
            for parts in (
                [_described(m, "x"), _described(m, "y", license="l2")],
                [_described(m, "x"), _described(m, "x")],
                [_described(m, "x"), m.Dataset.from_dict({"a": [0]})],
            )
        ],
        "interleave keeps the format and info": lambda m: (
            (merged := m.interleave_datasets([_described(m, "x"), _described(m, "y")])).format,
            _prose(merged),
        ),
        "transforms keep the info": lambda m: [
            _prose(derived)
            for derived in (
                _described(m, "x").map(lambda row: row),
                _described(m, "x").select([1]),
                _described(m, "x").filter(lambda row: True),
                _described(m, "x").rename_column("a", "b"),
            )
        ],
        "from_list and from_pandas take info": lambda m: [
            _prose(m.Dataset.from_list([{"a": 1}], info=m.DatasetInfo(description="l"))),
            _prose(
                m.Dataset.from_pandas(
                    _described(m, "p").to_pandas(), info=m.DatasetInfo(homepage="h")
                )
            ),
        ],
    }
)


def _labelled(module: ModuleType) -> Any:
    features = module.Features(
        {"a": module.Value("int32"), "l": module.ClassLabel(names=["x", "y"])}
    )
    return module.Dataset.from_dict({"a": [1, 2, 3], "l": [0, 1, 0]}, features=features)


@pytest.mark.parametrize("num_proc", [None, 2])
def test_map_writes_the_arrow_file_named_by_cache_file_name(
    datasets: ModuleType, tmp_path: Path, num_proc: int | None
) -> None:
    """One Arrow stream at that path, with the features; either library reads the other's."""
    paths = {datasets: tmp_path / "anchor.arrow", dagster_ds: tmp_path / "ours.arrow"}
    for module, path in paths.items():
        mapped = _labelled(module).map(lambda row: {"b": row["a"] * 2}, cache_file_name=str(path))
        assert path.is_file()
        assert module.Dataset.from_file(str(path)).to_dict() == mapped.to_dict()
    for module in paths:
        read = [module.Dataset.from_file(str(path)) for path in paths.values()]
        assert read[0].to_dict() == read[1].to_dict()
        assert read[0].features == read[1].features
    path = paths[dagster_ds]
    path.unlink()
    again = _labelled(dagster_ds).map(
        lambda row: {"b": row["a"] * 2}, cache_file_name=str(path), num_proc=num_proc
    )  # a cache hit (one file, whatever num_proc) writes the file too
    assert dagster_ds.Dataset.from_file(str(path)).to_dict() == again.to_dict()


def _length(example: dict[str, Any]) -> dict[str, Any]:
    return {"n": len(example["s"])}


def test_map_fingerprint_is_update_fingerprint_of_its_arguments_in_memory_and_on_disk(
    tmp_path: Path,
) -> None:
    """Where we differ: the anchor hashes its internal ``_map_single`` arguments, we these."""
    from dagster_ds.fingerprint import update_fingerprint

    in_memory = dagster_ds.Dataset.from_dict(DATA)
    in_memory.save_to_disk(str(tmp_path / "saved"))
    in_memory.to_parquet(str(tmp_path / "data.parquet"))
    on_disk = [
        dagster_ds.load_from_disk(str(tmp_path / "saved")),
        dagster_ds.Dataset.from_parquet(str(tmp_path / "data.parquet")),
    ]
    args = {
        "format": {"type": None, "format_kwargs": {}, "columns": None, "output_all_columns": False},
        "function": _length,
        "with_indices": False,
        "input_columns": None,
        "batched": False,
        "batch_size": None,  # only hashed when batched
        "drop_last_batch": None,
        "remove_columns": (),
        "fn_kwargs": {},
        "features": None,
    }
    for dataset in [in_memory, *on_disk]:
        expected = update_fingerprint(dataset.fingerprint, "map", args)
        assert dataset.map(_length, num_proc=2, desc="x").fingerprint == expected
        named = update_fingerprint(dataset.fingerprint, "map", {"function": _length})
        assert dataset.map(_length, new_fingerprint=named).fingerprint == named
    assert on_disk[0].map(_length).fingerprint == in_memory.map(_length).fingerprint


def _interleaved(module: ModuleType, strategy: str, probabilities: list[float], seed: int) -> Any:
    parts = [
        module.Dataset.from_dict({"x": list(range(start, start + n))})
        for start, n in ((0, 5), (100, 12), (200, 3))
    ]
    mixed = module.interleave_datasets(
        parts, probabilities=probabilities, seed=seed, stopping_strategy=strategy
    )
    return mixed["x"][:]


CASES.update(
    {
        f"interleave {strategy} {probabilities} seed {seed}": functools.partial(
            _interleaved, strategy=strategy, probabilities=probabilities, seed=seed
        )
        for strategy in ("first_exhausted", "all_exhausted", "all_exhausted_without_replacement")
        for probabilities in ([0.2, 0.5, 0.3], [0.7, 0.3, 0.0])
        for seed in (0, 42)
        if strategy == "first_exhausted" or 0.0 not in probabilities  # else: see below
    }
)
CASES["interleave all_exhausted of a never drawn dataset"] = lambda m: _raised(
    lambda: _interleaved(m, "all_exhausted", [0.7, 0.3, 0.0], 0)
)


def test_save_to_disk_keeps_the_info_either_way(datasets: ModuleType, tmp_path: Path) -> None:
    for saver in (datasets, dagster_ds):
        folder = str(tmp_path / saver.__name__)
        _described(saver, "saved", license="l3").save_to_disk(folder)
        for loader in (datasets, dagster_ds):
            assert _prose(loader.load_from_disk(folder)) == ("saved", "c-saved", "", "l3")


# Last: every module-level case above is in CASES by now.
@pytest.mark.parametrize("case", sorted(CASES))
def test_behaves_as_the_anchor(datasets: ModuleType, case: str) -> None:
    assert CASES[case](dagster_ds) == CASES[case](datasets)

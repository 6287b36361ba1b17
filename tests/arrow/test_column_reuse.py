"""Outputs reused by the columns their function read: a column edit reruns only its readers.

Each test runs a pipeline in real subprocesses over Parquet files (one shard per
file), counts the function calls with a side-effect counter, edits one column
of one file, runs again, and compares the rows with a from-scratch recompute
(the same pipeline in an empty cache).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_ds import Dataset
from tests.conftest import RunPython

PIPELINE = """
import json, os
from pathlib import Path
from dagster_ds import load_dataset

COUNTER = Path(os.environ["COUNTER"])
DATA = Path(os.environ["DATA"])

def note(name, rows):
    with COUNTER.open("a") as f:
        f.write(f"{name} {rows}\\n")

def n_chars(batch):
    note("n_chars", len(batch["text"]))
    return {"n_chars": [len(text) for text in batch["text"]]}

def label_name(batch):
    note("label_name", len(batch["label"]))
    return {"label_name": ["pos" if label else "neg" for label in batch["label"]]}

def both(batch):
    note("both", len(batch["text"]))
    return {"both": [f"{t}:{l}" for t, l in zip(batch["text"], batch["label"])]}

def flagged(batch):  # reads text only in a batch where some row is flagged
    flags = batch["flag"]
    note("flagged", len(flags))
    if any(flags):
        return {"shout": [t.upper() if f else "" for t, f in zip(batch["text"], flags)]}
    return {"shout": [""] * len(flags)}

def short(batch):
    note("short", len(batch["text"]))
    return [len(text) < 6 for text in batch["text"]]

def in_place(batch):  # returns its batch with one column read and one set
    note("in_place", len(batch["text"]))
    batch["n_chars"] = [len(text) for text in batch["text"]]
    return batch

def as_dict(batch):
    note("as_dict", len(batch["text"]))
    return {"n_chars": [len(text) for text in dict(batch)["text"]]}

def items(batch):
    note("items", len(batch["text"]))
    columns = {name: values for name, values in batch.items()}
    return {"n_chars": [len(text) for text in columns["text"]]}

def columnar(batch):
    note("columnar", len(batch["text"]))
    return {"n_chars": [len(str(text)) for text in list(batch["text"])]}

def per_example(example):
    note("per_example", 1)
    return {"n_chars": len(example["text"])}

def example_flagged(example):  # reads text only in the rows flagged
    note("example_flagged", 1)
    return {"shout": example["text"].upper() if example["flag"] else ""}

def example_in_place(example):  # returns its example with one column read and one set
    note("example_in_place", 1)
    example["n_chars"] = len(example["text"])
    return example

def example_dict(example):
    note("example_dict", 1)
    return {"n_chars": len(dict(example)["text"])}

def example_short(example):
    note("example_short", 1)
    return len(example["text"]) < 6

def chosen(steps):
    ds = load_dataset(
        "parquet", data_files=sorted(str(p) for p in DATA.glob("*.parquet")),
        split="train", shard_bytes=0,
    )
    for step in steps.split(","):
        kind, name, *fmt = step.split(":")
        if fmt:
            ds = ds.with_format(fmt[0])
        if kind == "map":
            batched = not name.startswith(("per_example", "example_"))
            ds = ds.map(globals()[name], batched=batched, batch_size=5)
        elif kind == "cols":
            ds = ds.map(lambda text: {"n_chars": [len(t) for t in text]}, batched=True,
                        input_columns=["text"])
        else:
            batched = not name.startswith("example_")
            ds = ds.filter(globals()[name], batched=batched, batch_size=5)
        ds = ds.with_format(None)
    return ds
"""

ROWS_PER_FILE = 20


def _write_files(data: Path, edit: dict[str, Any] | None = None) -> None:
    """Three Parquet files; ``edit``: {"file": i, "column": name, "rows": {row: value}}."""
    data.mkdir(exist_ok=True)
    for index in range(3):
        rows = range(ROWS_PER_FILE)
        columns: dict[str, list[Any]] = {
            "text": [f"t{index}-{row}" for row in rows],
            "label": [row % 2 for row in rows],
            "flag": [index == 1 and row == 3 for row in rows],
        }
        if edit is not None and edit["file"] == index:
            for row, value in edit["rows"].items():
                columns[edit["column"]][row] = value
        path = data / f"part-{index}.parquet"
        table = pa.table(columns)
        if not path.exists() or not pq.read_table(path).equals(table):
            pq.write_table(table, path)


class _Pipeline:
    def __init__(self, run_python: RunPython, tmp_path: Path, steps: str) -> None:
        self.run_python, self.tmp_path, self.steps = run_python, tmp_path, steps
        (tmp_path / "pipeline.py").write_text(PIPELINE)
        self.data = tmp_path / "data"
        self.counter = tmp_path / "calls.txt"
        self.runs = 0

    def run(self, cache: Path | None = None) -> tuple[list[dict[str, Any]], Counter[str]]:
        """The pipeline's rows, and the rows each function was called on."""
        self.counter.unlink(missing_ok=True)
        env = {"COUNTER": str(self.counter), "DATA": str(self.data)}
        if cache is not None:
            env["DAGSTER_DS_CACHE"] = str(cache)
        printed = self.run_python(
            f"""
            import json, pipeline
            out = pipeline.chosen({self.steps!r})
            print(json.dumps(out.to_list()))
            """,
            path=[self.tmp_path],
            env=env,
        )
        calls: Counter[str] = Counter()
        if self.counter.exists():
            for line in self.counter.read_text().splitlines():
                name, rows = line.split()
                calls[name] += int(rows)
        return json.loads(printed), calls

    def cold(self) -> list[dict[str, Any]]:
        """The rows recomputed from scratch, in an empty cache."""
        self.runs += 1
        rows, _ = self.run(self.tmp_path / f"cold-cache-{self.runs}")
        return rows


def test_a_label_correction_reruns_only_the_maps_that_read_labels_on_that_file(
    run_python: RunPython, tmp_path: Path
) -> None:
    pipeline = _Pipeline(
        run_python, tmp_path, "map:n_chars,map:label_name,map:both,filter:short,cols:-"
    )
    _write_files(pipeline.data)
    _, calls = pipeline.run()
    assert calls == {"n_chars": 60, "label_name": 60, "both": 60, "short": 60}

    _write_files(pipeline.data, {"file": 1, "column": "label", "rows": {0: 1, 7: 0}})
    rows, calls = pipeline.run()
    # n_chars, the filter and the input_columns map read only text: reused everywhere.
    assert calls == {"label_name": 20, "both": 20}
    assert rows == pipeline.cold()
    assert [row["label"] for row in rows if row["text"] == "t1-0"] == [1]  # the new labels

    _, calls = pipeline.run()  # the reused outputs are recorded: nothing runs
    assert calls == {}


@pytest.mark.parametrize(
    ("edit", "reruns"),
    [
        pytest.param({"file": 0, "column": "text", "rows": {4: "x"}}, 0, id="text-unflagged"),
        pytest.param({"file": 1, "column": "text", "rows": {12: "x"}}, 20, id="text-flagged"),
        pytest.param({"file": 2, "column": "flag", "rows": {0: True}}, 20, id="flag"),
    ],
)
def test_a_data_dependent_read_is_followed_shard_by_shard(
    run_python: RunPython, tmp_path: Path, edit: dict[str, Any], reruns: int
) -> None:
    pipeline = _Pipeline(run_python, tmp_path, "map:flagged")
    _write_files(pipeline.data)
    assert pipeline.run()[1] == {"flagged": 60}

    _write_files(pipeline.data, edit)
    rows, calls = pipeline.run()
    assert calls["flagged"] == reruns
    assert rows == pipeline.cold()


def test_a_label_correction_does_not_rerun_per_example_functions_that_read_only_text(
    run_python: RunPython, tmp_path: Path
) -> None:
    steps = "map:per_example,map:example_in_place,filter:example_short,map:example_flagged"
    pipeline = _Pipeline(run_python, tmp_path, steps)
    _write_files(pipeline.data)
    _, calls = pipeline.run()
    assert calls == {
        "per_example": 60, "example_in_place": 60, "example_short": 60, "example_flagged": 60
    }  # fmt: skip

    _write_files(pipeline.data, {"file": 1, "column": "label", "rows": {0: 1, 7: 0}})
    rows, calls = pipeline.run()
    assert calls == {}
    assert rows == pipeline.cold()
    assert [row["label"] for row in rows if row["text"] == "t1-0"] == [1]  # the new labels


@pytest.mark.parametrize(
    ("edit", "reruns"),
    [
        pytest.param({"file": 0, "column": "text", "rows": {4: "x"}}, 0, id="text-unflagged"),
        pytest.param({"file": 1, "column": "text", "rows": {12: "x"}}, 20, id="text-flagged"),
        pytest.param({"file": 2, "column": "flag", "rows": {0: True}}, 20, id="flag"),
    ],
)
def test_a_data_dependent_read_of_a_per_example_map_is_followed_shard_by_shard(
    run_python: RunPython, tmp_path: Path, edit: dict[str, Any], reruns: int
) -> None:
    pipeline = _Pipeline(run_python, tmp_path, "map:example_flagged")
    _write_files(pipeline.data)
    assert pipeline.run()[1] == {"example_flagged": 60}

    _write_files(pipeline.data, edit)
    rows, calls = pipeline.run()
    assert calls["example_flagged"] == reruns
    assert rows == pipeline.cold()


def test_a_function_that_returns_its_batch_rebuilds_only_what_it_read_or_set(
    run_python: RunPython, tmp_path: Path
) -> None:
    pipeline = _Pipeline(run_python, tmp_path, "map:in_place")
    _write_files(pipeline.data)
    pipeline.run()
    _write_files(pipeline.data, {"file": 2, "column": "label", "rows": {1: 5}})
    rows, calls = pipeline.run()
    assert calls == {}
    assert rows == pipeline.cold()


# Each reads every column its own way: every edit reaches it.
READS_EVERYTHING = (
    "map:as_dict",
    "map:items",
    "map:example_dict",
    "map:columnar:numpy",
    "map:columnar:pandas",
    "map:columnar:arrow",
)

# The pipelines of STEPS one after the other, each in its own cache (CACHES/<index>):
# a process per run, not per pipeline and run (each process costs seconds of imports).
EACH_PIPELINE = """
import json, os, pipeline
out = {}
for index, steps in enumerate(STEPS):
    os.environ["DAGSTER_DS_CACHE"] = os.path.join(CACHES, str(index))
    pipeline.COUNTER.unlink(missing_ok=True)
    rows = pipeline.chosen(steps).to_list()
    calls = {}
    if pipeline.COUNTER.exists():
        for line in pipeline.COUNTER.read_text().splitlines():
            name, count = line.split()
            calls[name] = calls.get(name, 0) + int(count)
    out[steps] = [rows, calls]
print(json.dumps(out))
"""


def _run_each(
    run_python: RunPython, tmp_path: Path, steps: tuple[str, ...], caches: str
) -> dict[str, tuple[list[dict[str, Any]], dict[str, int]]]:
    """Per pipeline of ``steps``: its rows and the rows each function was called on."""
    (tmp_path / "pipeline.py").write_text(PIPELINE)
    env = {"COUNTER": str(tmp_path / "calls.txt"), "DATA": str(tmp_path / "data")}
    source = f"STEPS = {steps!r}\nCACHES = {str(tmp_path / caches)!r}\n{EACH_PIPELINE}"
    printed = json.loads(run_python(source, path=[tmp_path], env=env))
    return {step: (rows, calls) for step, (rows, calls) in printed.items()}


def test_functions_that_read_everything_are_recomputed_on_any_column_change(
    run_python: RunPython, tmp_path: Path
) -> None:
    _write_files(tmp_path / "data")
    _run_each(run_python, tmp_path, READS_EVERYTHING, "caches")
    _write_files(tmp_path / "data", {"file": 0, "column": "label", "rows": {3: 7}})
    edited = _run_each(run_python, tmp_path, READS_EVERYTHING, "caches")
    cold = _run_each(run_python, tmp_path, READS_EVERYTHING, "cold-caches")
    for steps in READS_EVERYTHING:
        rows, calls = edited[steps]
        # The edited file's shard, computed again.
        assert sum(calls.values()) == 20, (steps, calls)
        assert rows == cold[steps][0], steps


def test_a_damaged_output_is_never_reused_by_its_columns(
    run_python: RunPython, tmp_path: Path
) -> None:
    pipeline = _Pipeline(run_python, tmp_path, "map:n_chars")
    _write_files(pipeline.data)
    pipeline.run()
    cache = Path(run_python("import os; print(os.environ['DAGSTER_DS_CACHE'])"))
    outputs = [
        path for path in cache.glob("objects/*/*/data-*.arrow") if b"n_chars" in path.read_bytes()
    ]
    assert len(outputs) == 3
    for path in outputs:  # flip a byte in the middle of each output's file
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))

    _write_files(pipeline.data, {"file": 1, "column": "label", "rows": {2: 9}})
    rows, calls = pipeline.run()
    assert rows == pipeline.cold()
    # Every damaged output is computed again: the changed shard's is not reused.
    assert calls == {"n_chars": 60}


COLUMNS = ("a", "b", "c")


@st.composite
def _cases(draw: st.DrawFn) -> dict[str, Any]:
    rows = draw(st.integers(1, 12))
    values = st.integers(-3, 3)
    table = {name: draw(st.lists(values, min_size=rows, max_size=rows)) for name in COLUMNS}
    edit = st.tuples(st.sampled_from(COLUMNS), st.integers(0, rows - 1), values)
    return {
        "table": table,
        "edits": draw(st.lists(edit, min_size=1, max_size=4)),
        "always": draw(st.lists(st.sampled_from(COLUMNS), unique=True, max_size=3)),
        "condition": draw(st.sampled_from(COLUMNS)),
        "then": draw(st.lists(st.sampled_from(COLUMNS), unique=True, max_size=3)),
        "style": draw(st.sampled_from(["new", "in_place", "delete", "filter"])),
        "batch_size": draw(st.integers(1, 5)),
    }


def _function(always: list[str], condition: str, then: list[str], style: str) -> Any:
    """A batched function that reads ``always``, and ``then`` in batches where ``condition`` > 0."""

    def function(batch: Any) -> Any:
        seen = [batch[name] for name in always]
        if any(value > 0 for value in batch[condition]):
            seen += [batch[name] for name in then]
        total = (
            [sum(each) for each in zip(*seen, strict=True)] if seen else [0] * len(batch[condition])
        )
        if style == "filter":
            return [value % 2 == 0 for value in total]
        if style == "new":
            return {"out": total}
        batch["out"] = total
        if always:  # change a column it read, in place
            batch[always[0]] = [value + 1 for value in batch[always[0]]]
        if style == "delete":
            del batch[COLUMNS[-1]]
        return batch

    return function


def _applied(case: dict[str, Any], table: dict[str, list[int]]) -> dict[str, Any]:
    function = _function(case["always"], case["condition"], case["then"], case["style"])
    dataset = Dataset.from_dict(table)
    if case["style"] == "filter":
        out = dataset.filter(function, batched=True, batch_size=case["batch_size"])
    else:
        out = dataset.map(function, batched=True, batch_size=case["batch_size"])
    return {"columns": out.column_names, "rows": out.to_dict(), "features": out.features.to_dict()}


@settings(max_examples=60, deadline=None)
@given(case=_cases())
def test_a_reused_result_always_equals_a_cold_recompute(case: dict[str, Any]) -> None:
    before = os.environ["DAGSTER_DS_CACHE"]
    try:
        with tempfile.TemporaryDirectory() as warm, tempfile.TemporaryDirectory() as cold:
            os.environ["DAGSTER_DS_CACHE"] = warm
            _applied(case, case["table"])
            edited = {name: list(values) for name, values in case["table"].items()}
            for name, row, value in case["edits"]:
                edited[name][row] = value
            reused = _applied(case, edited)
            os.environ["DAGSTER_DS_CACHE"] = cold
            assert reused == _applied(case, edited)
    finally:
        os.environ["DAGSTER_DS_CACHE"] = before

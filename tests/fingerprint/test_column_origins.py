"""column_origins: column sources followed back through lineage steps to their roots."""

from __future__ import annotations

from typing import Any

from dagster_ds.fingerprint import (
    EVERY_COLUMN,
    LineageStep,
    asset_names,
    column_origins,
    lineage_origins,
)

A, B, C, D = ("a" * 32, "b" * 32, "c" * 32, "d" * 32)


def _sources(
    steps: list[LineageStep], columns: list[str], **kwargs: Any
) -> dict[str, set[tuple[str, str]]]:
    found = column_origins(steps, columns, **kwargs)
    return {origin.column: set(origin.sources) for origin in found}


def test_a_step_that_recorded_nothing_depends_on_every_parent_column() -> None:
    steps = [
        LineageStep("rename_columns", B, (A,), (("y", ("x",)), ("z", ("z",)))),
        LineageStep("map", C, (B,)),  # not recorded
    ]
    assert _sources(steps, ["n"]) == {"n": {(A, "x"), (A, "z")}}
    unknown = [LineageStep("map", C, (A,))]
    assert _sources(unknown, ["n"]) == {"n": {(A, EVERY_COLUMN)}}
    assert _sources(unknown, ["n"], root_columns={A: ["p", "q"]}) == {"n": {(A, "p"), (A, "q")}}


def test_roots_stop_the_walk_and_transforms_name_what_made_a_column() -> None:
    steps = [
        LineageStep("map", B, (A,), (("x", ("x",)), ("n", ("x",)))),
        LineageStep("rename_columns", C, (B,), (("x", ("x",)), ("m", ("n",)))),
    ]
    found = {origin.column: origin for origin in column_origins(steps, ["x", "m"], roots=[B])}
    assert found["m"].sources == ((B, "n"),)
    assert found["m"].transforms == ("rename_columns",)
    assert found["x"].transforms == ()
    assert column_origins(steps, ["m"])[0].transforms == ("map", "rename_columns")


def test_several_parents_name_their_columns_by_position() -> None:
    step = LineageStep("concatenate_datasets", C, (A, B)).with_columns(
        {"x": ["0:x", "1:x"], "y": ["1:y"]}
    )
    assert step.parent_columns("x") == ((A, "x"), (B, "x"))
    assert _sources([step], ["x", "y"]) == {"x": {(A, "x"), (B, "x")}, "y": {(B, "y")}}


def test_a_fingerprint_made_again_later_is_followed_to_its_earlier_step() -> None:
    steps = [
        LineageStep("map", B, (A,), (("n", ("x",)),)),
        LineageStep("select", B, (B,), (("n", ("n",)),)),  # same fingerprint: no loop
    ]
    assert _sources(steps, ["n"]) == {"n": {(A, "x")}}


def test_an_asset_step_gives_its_recorded_sources_and_its_function_s_transforms() -> None:
    steps = [
        LineageStep("map", B, (A,), (("label", ("label",)), ("id", ("label",)))),
        LineageStep("dataset_asset:labelled", C, (A,), (("label", ("label",)), ("id", ("label",)))),
        LineageStep("rename_columns", D, (C,), (("label", ("label",)), ("k", ("id",)))),
        LineageStep("dataset_asset:stats", "e" * 32, (C,), (("k", ("id",)),)),
    ]
    origins = lineage_origins(steps)
    assert origins is not None
    (origin,) = origins
    assert (origin.column, origin.sources, origin.transforms) == (
        "k",
        ((C, "id"),),
        ("rename_columns",),
    )
    assert asset_names(steps) == {C: "labelled", "e" * 32: "stats"}
    assert lineage_origins([LineageStep("map", B, (A,))]) is None

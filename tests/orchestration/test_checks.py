"""schema_check and row_count_check on real materializations (including skipped ones)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from dagster_ds import Features, List, Value
from dagster_ds.errors import DatasetAssetDefinitionError
from dagster_ds.orchestration import DatasetIOManager, row_count_check, schema_check
from tests.orchestration._chain import build

TOKENS = Features({"text": Value("string"), "tokens": List(Value("string"))})


def _evaluations(result: dg.ExecuteInProcessResult) -> dict[str, tuple[bool, str]]:
    return {
        evaluation.check_name: (evaluation.passed, evaluation.description or "")
        for evaluation in result.get_asset_check_evaluations()
    }


def test_checks_pass_and_fail_with_a_reason(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: object
) -> None:
    chain = build(str(corpus))
    checks = [
        schema_check(chain.tokens, TOKENS),
        schema_check(chain.counts, TOKENS, name="counts_schema"),
        row_count_check(chain.tokens, min_rows=2, max_rows=2),
        row_count_check(chain.counts, min_rows=3, name="enough_counts"),
    ]
    resources = {"io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage"))}
    for _ in range(2):  # the second run is all cache hits: the checks read the same metadata
        result = dg.materialize(
            [*chain.all, *checks], instance=instance, resources=resources, selection=chain.all
        )
        assert result.success
        assert _evaluations(result) == {
            "schema": (True, "The schema is as expected."),
            "counts_schema": (False, "unexpected columns ['num_tokens']"),
            "row_count": (True, "2 rows, within [2, 2]."),
            "enough_counts": (False, "2 rows, outside [3, inf]."),
        }


def test_a_blocking_check_stops_the_downstream_assets(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: object
) -> None:
    chain = build(str(corpus))
    wrong = Features({"text": Value("int64"), "tokens": List(Value("string"))})
    check = schema_check(chain.tokens, wrong, blocking=True)
    result = dg.materialize(
        [*chain.all, check],
        instance=instance,
        resources={"io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage"))},
        selection=chain.all,
        raise_on_error=False,
    )
    assert _evaluations(result)["schema"] == (
        False,
        "column 'text' is string, expected int64",
    )
    assert instance.get_latest_materialization_event(dg.AssetKey("counts")) is None


def test_bounds_are_checked_when_declared() -> None:
    with pytest.raises(DatasetAssetDefinitionError, match="needs min_rows"):
        row_count_check("docs")
    with pytest.raises(DatasetAssetDefinitionError, match="min_rows=5 is above max_rows=1"):
        row_count_check("docs", min_rows=5, max_rows=1)

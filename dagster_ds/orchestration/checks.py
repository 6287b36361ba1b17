"""Asset checks for dataset assets: the schema, the row count, and checks of the candidate.

`schema_check` and `row_count_check` read the metadata the latest
materialization recorded (``dagster/column_schema``, ``dagster/row_count``),
so they cost nothing on the data and also hold for a skipped (cache hit)
materialization, which carries the same metadata as the one that produced its
fingerprint. A `dataset_check` runs inside the asset's own step, on the
candidate version before it is pushed to the Hub: write, audit, publish.
"""

# No `from __future__ import annotations`: Dagster reads the check functions' annotations.
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, overload

import dagster as dg

from dagster_ds.errors import DatasetAssetDefinitionError
from dagster_ds.features import Features
from dagster_ds.orchestration._partitions import latest_materialization
from dagster_ds.orchestration.metadata import (
    DatasetMetadataKey,
    feature_text,
    schema_text,
    type_name,
)

__all__ = ["DatasetCheck", "dataset_check", "row_count_check", "schema_check"]

AssetRef = dg.AssetsDefinition | dg.SourceAsset | dg.AssetKey | str


def schema_check(
    asset: AssetRef,
    features: Features | Mapping[str, Any],
    *,
    name: str = "schema",
    blocking: bool = False,
    description: str | None = None,
) -> dg.AssetChecksDefinition:
    """An asset check that the dataset has exactly these columns, in order, with these types.

    Args:
        asset: The dataset asset (or its key).
        features: The expected `Features` (or a dict that `Features` accepts).
        name: The check's name.
        blocking: Fail the run before downstream assets when the check fails.
        description: Shown in the UI.

    Example:
        >>> from dagster_ds import Features, Value
        >>> check = schema_check("docs", Features({"text": Value("string")}))
        >>> check.check_keys == {dg.AssetCheckKey(dg.AssetKey("docs"), "schema")}
        True
    """
    expected = features if isinstance(features, Features) else Features(dict(features))
    wanted = [(column, repr(feature)) for column, feature in expected.items()]
    key = _key(asset)

    @dg.asset_check(
        asset=key,
        name=name,
        blocking=blocking,
        description=description or f"The columns, in order: {schema_text(dict(wanted))}.",
    )
    def _check(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        schema = _latest_metadata(context.instance, key).get(DatasetMetadataKey.COLUMN_SCHEMA.value)
        if schema is None or not isinstance(schema.value, dg.TableSchema):
            return dg.AssetCheckResult(
                passed=False,
                description=f"{key.to_user_string()} has no recorded column schema.",
            )
        # The feature is the column's description (earlier releases recorded it as its type).
        actual = [
            (column.name, column.description or column.type) for column in schema.value.columns
        ]
        problems = _schema_differences(wanted, actual)
        return dg.AssetCheckResult(
            passed=not problems,
            description="; ".join(problems) or "The schema is as expected.",
            metadata={
                "expected": dg.MetadataValue.table_schema(
                    dg.TableSchema(
                        columns=[
                            dg.TableColumn(name, type_name(feature), description=repr(feature))
                            for name, feature in expected.items()
                        ]
                    )
                )
            },
        )

    return _check


def row_count_check(
    asset: AssetRef,
    *,
    min_rows: int | None = None,
    max_rows: int | None = None,
    name: str = "row_count",
    blocking: bool = False,
    description: str | None = None,
) -> dg.AssetChecksDefinition:
    """An asset check that the dataset's row count lies within bounds.

    Args:
        asset: The dataset asset (or its key).
        min_rows: The smallest acceptable row count (inclusive).
        max_rows: The largest acceptable row count (inclusive).
        name: The check's name.
        blocking: Fail the run before downstream assets when the check fails.
        description: Shown in the UI.

    Raises:
        DatasetAssetDefinitionError: Neither bound is given, or they are crossed.

    Example:
        >>> check = row_count_check("docs", min_rows=1_000)
        >>> [key.name for key in check.check_keys]
        ['row_count']
    """
    if min_rows is None and max_rows is None:
        raise DatasetAssetDefinitionError("row_count_check needs min_rows=, max_rows= or both.")
    if min_rows is not None and max_rows is not None and min_rows > max_rows:
        raise DatasetAssetDefinitionError(
            f"row_count_check: min_rows={min_rows!r} is above max_rows={max_rows!r}."
        )
    key = _key(asset)
    low = "-inf" if min_rows is None else str(min_rows)
    bounds = f"[{low}, {'inf' if max_rows is None else max_rows}]"

    @dg.asset_check(
        asset=key,
        name=name,
        blocking=blocking,
        description=description or f"The row count is within {bounds}.",
    )
    def _check(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        count = _latest_metadata(context.instance, key).get(DatasetMetadataKey.ROW_COUNT.value)
        if count is None or not isinstance(count.value, int):
            return dg.AssetCheckResult(
                passed=False, description=f"{key.to_user_string()} has no recorded row count."
            )
        rows = count.value
        passed = (min_rows is None or rows >= min_rows) and (max_rows is None or rows <= max_rows)
        return dg.AssetCheckResult(
            passed=passed,
            description=f"{rows} rows, {'within' if passed else 'outside'} {bounds}.",
            metadata={"row_count": dg.MetadataValue.int(rows)},
        )

    return _check


CheckFunction = Callable[[Any], "bool | dg.AssetCheckResult"]


@dataclass(frozen=True)
class DatasetCheck:
    """A check a dataset asset runs on its candidate version, in its own step.

    Give it to ``dataset_asset(checks=[...])``. The asset stores the candidate
    (write), runs its checks on it (audit), and pushes it to the Hub only when
    every blocking check passed (publish). Each check is an asset check of the
    asset in Dagster's UI; a failed blocking check also stops the assets
    downstream, as Dagster's blocking checks do.

    Attributes:
        name: The check's name (unique among the asset's checks).
        function: Takes the candidate dataset; returns True/False or a
            ``dg.AssetCheckResult``.
        blocking: Whether a failure withholds the Hub push and stops downstream assets.
        description: Shown in the UI.

    Example:
        >>> check = DatasetCheck("not_empty", lambda dataset: dataset.num_rows > 0)
        >>> check.spec(dg.AssetKey("docs")).blocking
        True
    """

    name: str
    function: CheckFunction
    blocking: bool = True
    description: str | None = None

    def spec(self, key: dg.AssetKey) -> dg.AssetCheckSpec:
        """The Dagster check spec of this check on the asset ``key``."""
        return dg.AssetCheckSpec(
            self.name, asset=key, blocking=self.blocking, description=self.description
        )

    def evaluate(self, key: dg.AssetKey, dataset: Any) -> dg.AssetCheckResult:
        """Run the check on ``dataset``; an exception is a failure that says what was raised."""
        try:
            outcome = self.function(dataset)
        except Exception as error:  # the check's own failure, reported as its result
            return dg.AssetCheckResult(
                asset_key=key,
                check_name=self.name,
                passed=False,
                description=f"The check raised {type(error).__name__}: {error}",
            )
        if isinstance(outcome, dg.AssetCheckResult):
            return outcome._replace(asset_key=key, check_name=self.name)
        if not isinstance(outcome, bool):
            raise DatasetAssetDefinitionError(
                f"dataset_check {self.name!r} returned {outcome!r}; return True, False or a"
                " dg.AssetCheckResult."
            )
        return dg.AssetCheckResult(asset_key=key, check_name=self.name, passed=outcome)


@overload
def dataset_check(fn: CheckFunction, /) -> DatasetCheck: ...
@overload
def dataset_check(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    blocking: bool = True,
    description: str | None = None,
) -> Callable[[CheckFunction], DatasetCheck]: ...
def dataset_check(
    fn: CheckFunction | None = None,
    /,
    *,
    name: str | None = None,
    blocking: bool = True,
    description: str | None = None,
) -> DatasetCheck | Callable[[CheckFunction], DatasetCheck]:
    """Declare a check of a dataset asset's candidate version (write-audit-publish).

    Args:
        fn: The check: takes the dataset, returns True/False or a ``dg.AssetCheckResult``.
        name: The check's name; default: the function's name.
        blocking: A failure withholds the Hub push and stops downstream assets (default).
        description: Shown in the UI; default: the function's docstring.

    Example:
        >>> @dataset_check
        ... def not_empty(dataset) -> bool:
        ...     return dataset.num_rows > 0
        >>> not_empty.name, not_empty.blocking
        ('not_empty', True)
    """

    def declare(function: CheckFunction) -> DatasetCheck:
        return DatasetCheck(
            name or function.__name__,
            function,
            blocking,
            description if description is not None else function.__doc__,
        )

    return declare(fn) if fn is not None else declare


def _key(asset: AssetRef) -> dg.AssetKey:
    if isinstance(asset, dg.AssetsDefinition | dg.SourceAsset):
        return asset.key
    return dg.AssetKey.from_coercible(asset)


def _latest_metadata(instance: dg.DagsterInstance, key: dg.AssetKey) -> Mapping[str, Any]:
    materialization = latest_materialization(instance, key)
    return materialization.metadata if materialization is not None else {}


def _schema_differences(wanted: list[tuple[str, str]], actual: list[tuple[str, str]]) -> list[str]:
    problems: list[str] = []
    actual_types = dict(actual)
    wanted_types = dict(wanted)
    missing = [column for column in wanted_types if column not in actual_types]
    extra = [column for column in actual_types if column not in wanted_types]
    if missing:
        problems.append(f"missing columns {missing}")
    if extra:
        problems.append(f"unexpected columns {extra}")
    problems.extend(
        f"column {column!r} is {feature_text(actual_types[column])}, expected {feature_text(kind)}"
        for column, kind in wanted
        if column in actual_types and actual_types[column] != kind
    )
    if not problems and [c for c, _ in actual] != [c for c, _ in wanted]:
        problems.append(
            f"columns are in order {[c for c, _ in actual]}, expected {list(wanted_types)}"
        )
    return problems

"""Column lineage of a dataset asset: each output column and the upstream asset columns behind it.

The asset function's transforms record, step by step, which parent columns
each column came from; `AssetColumns` follows them back to the asset's inputs
(its upstream assets' outputs) and says it three ways: ``dagster/column_lineage``
(Dagster's `TableColumnLineage`), a Markdown table for the open-source UI, and
the column sources of the asset's own lineage step (which the dataset card of
a push carries).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

from dagster_ds.arrow import Dataset, LineageStep
from dagster_ds.fingerprint import EVERY_COLUMN, ColumnOrigin, column_origins
from dagster_ds.orchestration.metadata import DatasetMetadataKey, markdown_table
from dagster_ds.streaming import IterableDataset

#: Dagster's own key for column lineage (its UI draws it in Dagster+ only).
COLUMN_LINEAGE = DatasetMetadataKey.COLUMN_LINEAGE.value
#: The same lineage as a Markdown table, readable in the open-source UI.
COLUMN_LINEAGE_TABLE = DatasetMetadataKey.COLUMN_LINEAGE_TABLE.value


class AssetColumns:
    """Where the columns of an asset function's ``output`` came from among its ``inputs``.

    Args:
        output: What the asset function returned.
        inputs: The upstream assets' datasets the function was given, by asset key.
    """

    def __init__(
        self,
        output: Dataset | IterableDataset,
        inputs: Mapping[dg.AssetKey, Dataset | IterableDataset],
    ) -> None:
        self.output = output
        self.parents = tuple(dataset.fingerprint for dataset in inputs.values())
        self.assets: dict[str, list[dg.AssetKey]] = defaultdict(list)
        self.root_columns: dict[str, list[str]] = {}
        for key, dataset in inputs.items():
            self.assets[dataset.fingerprint].append(key)
            if dataset.column_names is not None:
                self.root_columns[dataset.fingerprint] = list(dataset.column_names)

    def origins(self, columns: Sequence[str]) -> tuple[ColumnOrigin, ...]:
        """Each of ``columns`` followed back to the inputs' columns."""
        return column_origins(
            self.output.lineage,
            columns,
            fingerprint=self.output.fingerprint,
            roots=self.parents,
            root_columns=self.root_columns,
        )

    def record(self, result: Dataset | IterableDataset) -> Dataset | IterableDataset:
        """``result`` (the asset's dataset) with its asset step's column sources recorded."""
        if isinstance(result, Dataset):
            sources: dict[str, tuple[str, ...]] = {}
            for origin in self.origins(result.column_names):
                sources[origin.column] = tuple(
                    LineageStep.source_name(index, column, len(self.parents))
                    for fingerprint, column in origin.sources
                    for index, parent in enumerate(self.parents)
                    if parent == fingerprint
                )
            result._record_column_sources(sources)  # pyright: ignore[reportPrivateUsage]
        return result

    def metadata(self, columns: Sequence[str] | None) -> dict[str, Any]:
        """``dagster/column_lineage`` and its Markdown table, for a dataset of ``columns``."""
        if columns is None:
            return {}
        origins = self.origins(columns)
        deps: dict[str, list[dg.TableColumnDep]] = {}
        rows: list[dict[str, Any]] = []
        for origin in origins:
            upstream = [
                (key, column)
                for fingerprint, column in origin.sources
                for key in self.assets.get(fingerprint, ())
            ]
            deps[origin.column] = [
                dg.TableColumnDep(asset_key=key, column_name=column)
                for key, column in upstream
                if column != EVERY_COLUMN
            ]
            rows.append(
                {
                    "column": origin.column,
                    "from": ", ".join(f"{key.to_user_string()}.{col}" for key, col in upstream)
                    or "(no upstream column)",
                    "made by": ", ".join(origin.transforms) or "(passed through)",
                }
            )
        return {
            COLUMN_LINEAGE: dg.TableColumnLineage(deps_by_column=deps),
            COLUMN_LINEAGE_TABLE: dg.MetadataValue.md(markdown_table(rows, max_chars=200)),
        }

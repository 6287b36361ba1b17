"""DatasetTranslator: how a dataset asset is named, grouped, described and tagged, and its metadata.

In the style of dagster-dbt's translator: one public ``get_*`` method per
property of an asset, each given the `DatasetAssetProps` of the asset (its
name, function and kind). Subclass it and override a method to change that
property for every asset you define with it; an argument given to
`dataset_asset` or `dataset_source` (``name=``, ``group_name=``, ...) always
wins over the translator. `get_metadata` describes the *data* on each
materialization (row count, schema, preview).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from dagster_ds.orchestration.metadata import DatasetMetadataKey, markdown_table, type_name

__all__ = ["DatasetAssetProps", "DatasetTranslator", "DatasetTranslatorSettings"]


@dataclass(frozen=True)
class DatasetAssetProps:
    """What the translator knows about one asset when it is defined.

    Attributes:
        name: The asset's name (the function's name, or ``name=``).
        kind: ``"asset"`` (a `dataset_asset`), ``"source"`` (a `dataset_source`)
            or ``"upstream"`` (a parameter naming an upstream asset).
        function: The asset's function (None for sources and upstream names).
        key_prefix: The ``key_prefix=`` given, as a list.
        source: Where a source reads from (``"'json' with data files ..."``).

    Example:
        >>> DatasetAssetProps("docs", kind="source").name
        'docs'
    """

    name: str
    kind: str = "asset"
    function: Callable[..., Any] | None = None
    key_prefix: Sequence[str] = field(default_factory=lambda: ())
    source: str | None = None


@dataclass(frozen=True)
class DatasetTranslatorSettings:
    """Settings of the default `DatasetTranslator`.

    Attributes:
        preview_rows: How many rows the Markdown preview shows.
        preview_max_chars: Longer cell values are cut to this many characters.

    Example:
        >>> DatasetTranslator(DatasetTranslatorSettings(preview_rows=3)).settings.preview_rows
        3
    """

    preview_rows: int = 5
    preview_max_chars: int = 80


class DatasetTranslator:
    """Names, groups, describes and tags dataset assets, and builds their data metadata.

    Override a ``get_*`` method to change one property for every asset built
    with this translator (``dataset_asset(translator=...)``,
    ``dataset_source(translator=...)``). Arguments given to the decorator win.
    `get_metadata` must depend only on the data: when an asset is skipped
    because its fingerprint is unchanged, the entries are copied from the
    materialization that produced that fingerprint.

    Example:
        >>> import dagster as dg
        >>> class Prefixed(DatasetTranslator):
        ...     def get_asset_key(self, props):
        ...         return dg.AssetKey(["text", props.name])
        ...     def get_group_name(self, props):
        ...         return "text"
        >>> Prefixed().get_asset_key(DatasetAssetProps("docs")).to_user_string()
        'text/docs'
    """

    def __init__(self, settings: DatasetTranslatorSettings | None = None) -> None:
        self.settings = settings or DatasetTranslatorSettings()

    # -- definition-time properties ------------------------------------------

    def get_asset_key(self, props: DatasetAssetProps) -> dg.AssetKey:
        """The asset key: ``key_prefix`` followed by the name."""
        return dg.AssetKey([*props.key_prefix, props.name])

    def get_group_name(self, props: DatasetAssetProps) -> str | None:
        """The asset group; None is Dagster's default group."""
        return None

    def get_description(self, props: DatasetAssetProps) -> str | None:
        """The function's docstring; for a source, where it reads from."""
        if props.function is not None:
            return inspect.getdoc(props.function)
        if props.source is not None:
            return f"Dataset source: {props.source}."
        return None

    def get_tags(self, props: DatasetAssetProps) -> Mapping[str, str]:
        """Asset tags; none by default."""
        return {}

    def get_automation_condition(self, props: DatasetAssetProps) -> dg.AutomationCondition | None:
        """When Dagster's automation requests the asset; None: only when asked."""
        return None

    # -- materialization metadata --------------------------------------------

    def get_metadata(self, dataset: Any) -> dict[str, Any]:
        """Every data-describing entry: row count, column schema, column count, preview."""
        metadata: dict[str, Any] = {
            DatasetMetadataKey.COLUMN_SCHEMA.value: self.get_column_schema(dataset),
            DatasetMetadataKey.NUM_COLUMNS.value: dg.MetadataValue.int(
                len(dataset.column_names or [])
            ),
            DatasetMetadataKey.PREVIEW.value: self.get_preview(dataset),
        }
        row_count = self.get_row_count(dataset)
        if row_count is not None:
            metadata[DatasetMetadataKey.ROW_COUNT.value] = dg.MetadataValue.int(row_count)
        return metadata

    def get_row_count(self, dataset: Any) -> int | None:
        """The number of rows, or None when unknown without reading everything (streams)."""
        num_rows = getattr(dataset, "num_rows", None)
        return num_rows if isinstance(num_rows, int) else None

    def get_column_schema(self, dataset: Any) -> dg.TableSchema:
        """A `TableSchema`: each column's stored type (``list<string>``), its feature described."""
        features = dataset.features or {}
        return dg.TableSchema(
            columns=[
                dg.TableColumn(name, type_name(feature), description=repr(feature))
                for name, feature in features.items()
            ]
        )

    def get_preview(self, dataset: Any) -> dg.MarkdownMetadataValue:
        """A Markdown table of the first ``preview_rows`` rows, cells escaped and cut."""
        rows = _first_rows(dataset, self.settings.preview_rows)
        return dg.MetadataValue.md(markdown_table(rows, self.settings.preview_max_chars))


@dataclass(frozen=True)
class AssetNaming:
    """The translated definition properties, after the decorator's own arguments."""

    key: dg.AssetKey
    group_name: str | None
    description: str | None
    tags: Mapping[str, str] | None
    automation_condition: dg.AutomationCondition | None


def resolve_naming(
    translator: DatasetTranslator,
    props: DatasetAssetProps,
    *,
    name: str | None,
    key_prefix: str | Sequence[str] | None,
    group_name: str | None,
    description: str | None,
    tags: Mapping[str, str] | None,
    automation_condition: dg.AutomationCondition | None,
) -> AssetNaming:
    """The translator's answers, each replaced by the decorator's argument when one was given."""
    if name is not None or key_prefix is not None:
        key = dg.AssetKey([*prefix_parts(key_prefix), props.name])
    else:
        key = translator.get_asset_key(props)
    translated_tags = dict(translator.get_tags(props))
    return AssetNaming(
        key=key,
        group_name=group_name if group_name is not None else translator.get_group_name(props),
        description=description if description is not None else translator.get_description(props),
        tags={**translated_tags, **(tags or {})} or None,
        automation_condition=automation_condition
        if automation_condition is not None
        else translator.get_automation_condition(props),
    )


def prefix_parts(key_prefix: str | Sequence[str] | None) -> list[str]:
    """``key_prefix`` as a list of key parts."""
    return [key_prefix] if isinstance(key_prefix, str) else list(key_prefix or [])


def _first_rows(dataset: Any, count: int) -> list[dict[str, Any]]:
    num_rows = getattr(dataset, "num_rows", None)
    if isinstance(num_rows, int):  # map-style: Arrow rows, no Python formatting
        shards = getattr(dataset, "_shards", None)
        if getattr(dataset, "_mapping", None) is not None or shards is None:
            return dataset.with_format("arrow")[: min(count, num_rows)].to_pylist()
        # Shard by shard: slicing the dataset would open (on S3: download) every shard.
        rows: list[dict[str, Any]] = []
        for shard in shards:
            if len(rows) >= count:
                break
            rows.extend(shard.read(0, min(count - len(rows), shard.num_rows)).to_pylist())
        return rows
    return list(dataset.take(count))  # a stream: read only the first rows

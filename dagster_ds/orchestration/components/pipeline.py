"""DatasetPipelineComponent: a dataset pipeline declared in ``defs.yaml``.

Sources are `dataset_source`s, transforms are `dataset_asset`s over a Python
function named by import path (bound to ``fn_kwargs``, which enter its
transform hash), pushes are `publish_to_hub` assets (several splits, one
commit) and checks are `row_count_check`/`schema_check`. A source or a
transform may declare ``partitions_def`` (``type: daily``/``hourly`` with
``start_date``, ``static`` with ``partition_keys``, ``dynamic`` with ``name``;
see `components.partitions`). Relative paths (files, ``storage``) are read
from the component's folder; a function path starting with ``.`` is a module
in that folder (``.transforms.lowercase``).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import dagster as dg
from pydantic import Field

from dagster_ds.errors import DatasetAssetDefinitionError
from dagster_ds.features import Features, Value
from dagster_ds.orchestration.asset import dataset_asset
from dagster_ds.orchestration.automation import fingerprint_changed, fingerprint_source_sensor
from dagster_ds.orchestration.checks import row_count_check, schema_check
from dagster_ds.orchestration.components.partitions import PartitionsModel, partitions_definition
from dagster_ds.orchestration.components.resources import shared_resource
from dagster_ds.orchestration.io_manager import DatasetIOManager
from dagster_ds.orchestration.publish import publish_to_hub
from dagster_ds.orchestration.resource import HubResource, HubTarget
from dagster_ds.orchestration.source import dataset_source

__all__ = ["DatasetPipelineComponent"]

_EXAMPLE_ROWS = (
    '{"text": "Hello World"}\n{"text": "  The Quick Brown Fox  "}\n{"text": "Datasets As Assets"}\n'
)
_EXAMPLE_TRANSFORMS = '''"""Transforms of this pipeline: functions of datasets, hashed by value."""

from dagster_ds import Dataset


def lowercase(docs: Dataset, strip: bool = True) -> Dataset:
    """The text, lowercased (and stripped)."""
    return docs.map(lambda row: {"text": (row["text"].strip() if strip else row["text"]).lower()})
'''


class DatasetPipelineScaffolder(dg.Scaffolder):
    """``dg scaffold defs dagster_ds.DatasetPipelineComponent NAME``: a pipeline that runs.

    Writes ``defs.yaml`` (a source, a transform with ``fn_kwargs`` and a row
    count check, in a group named after the folder: ``dg launch --assets
    group:NAME`` runs it), ``transforms.py`` and ``data/docs.jsonl`` to start from.
    """

    def scaffold(self, request: dg.ScaffoldRequest[Any]) -> None:
        """Write the example pipeline into the new component folder, its group named after it."""
        folder = Path(request.target_path)
        (folder / "data").mkdir(parents=True, exist_ok=True)
        (folder / "data" / "docs.jsonl").write_text(_EXAMPLE_ROWS, encoding="utf-8")
        (folder / "transforms.py").write_text(_EXAMPLE_TRANSFORMS, encoding="utf-8")
        dg.scaffold_component(
            request,
            {
                "group_name": _identifier(folder.name),
                "sources": [{"name": "docs", "path": "json", "data_files": "data/docs.jsonl"}],
                "transforms": [
                    {
                        "name": "lowercased",
                        "fn": ".transforms.lowercase",
                        "fn_kwargs": {"strip": True},
                    }
                ],
                "checks": [{"asset": "lowercased", "min_rows": 1}],
            },
        )


class DatasetSourceModel(dg.Model):
    """A `dataset_source`: files (or a Hub repository) read with `load_dataset`."""

    name: str = Field(description="The asset's name; transforms take it as a parameter.")
    path: str = Field(description="A format name (json, csv, parquet, text), a file or folder.")
    data_files: str | list[str] | dict[str, str | list[str]] | None = Field(
        default=None, description="Files or globs, relative to this folder or any fsspec URL."
    )
    data_dir: str | None = None
    split: str = "train"
    reader_options: dict[str, Any] = Field(default_factory=dict)
    description: str | None = None
    partitions_def: PartitionsModel | None = Field(
        default=None,
        description="Partition the source (daily, hourly, static, dynamic); data_files are then"
        " templates: '{partition_key}', '{start:%Y-%m-%d}'.",
    )


class DatasetTransformModel(dg.Model):
    """A `dataset_asset`: ``fn(**upstream datasets, **fn_kwargs)`` returns the dataset."""

    name: str = Field(description="The asset's name.")
    fn: str = Field(description="The function: 'package.module.fn' or '.module.fn' (this folder).")
    fn_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments bound to the function (hashed)."
    )
    inputs: dict[str, str] = Field(
        default_factory=dict,
        description="Parameter to upstream asset, for parameters not named like their asset.",
    )
    description: str | None = None
    push_to_hub: str | None = Field(default=None, description="A repo id to push this split to.")
    split: str | None = Field(default=None, description="The split name when pushed.")
    partitions_def: PartitionsModel | None = Field(
        default=None,
        description="Partition the transform: each partition its own fingerprint and version.",
    )


class DatasetPushModel(dg.Model):
    """A `publish_to_hub` asset: several split assets, one Hub commit."""

    name: str
    repo_id: str
    splits: dict[str, str] = Field(description="Split name to the asset that is that split.")
    config_name: str = "default"
    revision: str | None = None
    private: bool | None = None


class DatasetCheckModel(dg.Model):
    """A row count check (``min_rows``/``max_rows``) or a schema check (``columns``)."""

    asset: str
    name: str | None = None
    min_rows: int | None = None
    max_rows: int | None = None
    columns: dict[str, Any] | None = Field(
        default=None,
        description="Column to type: a dtype ('string', 'int64') or a features dict.",
    )
    blocking: bool = False


@dg.scaffold_with(DatasetPipelineScaffolder)
class DatasetPipelineComponent(dg.Component, dg.Model, dg.Resolvable):
    """Dataset sources, transforms, Hub pushes and checks, declared in ``defs.yaml``.

    Every transform is a `dataset_asset`: skipped when its fingerprint is stored,
    versioned by its transform hash (the function, its helpers and ``fn_kwargs``).
    With ``resources: true`` (the default) the component also brings the
    ``io_manager`` (a `DatasetIOManager` over ``storage``) and, when it pushes,
    ``hub`` (the embedded local Hub, or huggingface.co with ``HF_TOKEN``)
    resources, made with `shared_resource`: a project defining equal ones with
    it (as the example does) merges with them instead of clashing. With
    ``automation: fingerprint_changed`` (the default) a `fingerprint_source_sensor`
    observes the sources every 15 minutes without a run, and a run is requested
    only for what changed.

    Example:
        >>> component = DatasetPipelineComponent.model_validate(
        ...     {"sources": [{"name": "docs", "path": "json", "data_files": "docs.jsonl"}]}
        ... )
        >>> [source.name for source in component.sources]
        ['docs']
    """

    group_name: str | None = Field(default=None, description="The group of every asset.")
    automation: Literal["fingerprint_changed", "none"] = Field(
        default="fingerprint_changed",
        description="fingerprint_changed: automation requests an asset only when it changed.",
    )
    sources: list[DatasetSourceModel] = Field(default_factory=list)
    transforms: list[DatasetTransformModel] = Field(default_factory=list)
    pushes: list[DatasetPushModel] = Field(default_factory=list)
    checks: list[DatasetCheckModel] = Field(default_factory=list)
    storage: str | None = Field(
        default=None,
        description="The dataset store (a folder, relative to this one, or an fsspec URL).",
    )
    resources: bool = Field(
        default=True, description="Define the io_manager resource, and hub when pushing."
    )

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        """The assets, checks and (optionally) resources this pipeline declares."""
        folder = context.path if context.path.is_dir() else context.path.parent
        condition = fingerprint_changed() if self.automation == "fingerprint_changed" else None
        assets: list[Any] = [self._source(source, folder) for source in self.sources]
        assets += [self._transform(t, context, folder, condition) for t in self.transforms]
        assets += [
            publish_to_hub(
                push.name,
                HubTarget(
                    push.repo_id,
                    config_name=push.config_name,
                    revision=push.revision,
                    private=push.private,
                ),
                push.splits,
                group_name=self.group_name,
                automation_condition=condition,
            )
            for push in self.pushes
        ]
        resources: dict[str, Any] = {}
        if self.resources:
            # Shared objects: a project (or another component) defining equal ones merges.
            base_dir = _files(self.storage, folder) if self.storage else None
            resources["io_manager"] = shared_resource(DatasetIOManager(base_dir=base_dir))
            if self.pushes or any(t.push_to_hub for t in self.transforms):
                resources["hub"] = shared_resource(HubResource.from_env())
        return dg.Definitions(
            assets=assets,
            asset_checks=[_check(check) for check in self.checks],
            resources=resources,
            sensors=[self._observer(context, folder)] if condition and self.sources else [],
        )

    def _observer(self, context: dg.ComponentLoadContext, folder: Path) -> dg.SensorDefinition:
        """Observes the sources every 15 minutes in its own process: a run only on a change.

        A new fingerprint is recorded as an observation, and fingerprint_changed() then
        requests what is below it; an unchanged source records nothing and requests nothing.
        """
        where = folder.relative_to(context.defs_module_path).as_posix()  # e.g. "docs_pipeline"
        name = "observe_" + _identifier(where)
        keys = [dg.AssetKey(source.name) for source in self.sources]
        return fingerprint_source_sensor(
            name,
            dg.AssetSelection.assets(*keys).downstream(),
            minimum_interval_seconds=15 * 60,
            default_status=dg.DefaultSensorStatus.RUNNING,
        )

    def _source(self, source: DatasetSourceModel, folder: Path) -> dg.SourceAsset:
        local = folder / source.path
        return _source_asset(
            source,
            path=str(local) if local.exists() else source.path,
            folder=folder,
            group_name=self.group_name,
        )

    def _transform(
        self,
        transform: DatasetTransformModel,
        context: dg.ComponentLoadContext,
        folder: Path,
        condition: dg.AutomationCondition | None,
    ) -> dg.AssetsDefinition:
        function = _bound(transform, _import(transform.fn, context, folder))
        target = (
            HubTarget(transform.push_to_hub, split=transform.split or transform.name)
            if transform.push_to_hub
            else None
        )
        return dataset_asset(
            name=transform.name,
            ins={
                param: dg.AssetIn(key=dg.AssetKey(asset))
                for param, asset in transform.inputs.items()
            },
            group_name=self.group_name,
            description=transform.description or inspect.getdoc(function.func),
            kinds={"dagster_ds"},
            automation_condition=condition,
            push_to_hub=target,
            partitions_def=partitions_definition(transform.name, transform.partitions_def),
        )(function)


def _identifier(text: str) -> str:
    """``text`` as a Dagster name: letters, digits and underscores."""
    return "".join(c if c.isalnum() else "_" for c in text)


def _source_asset(
    source: DatasetSourceModel,
    *,
    path: str,
    folder: Path,
    group_name: str | None,
) -> dg.SourceAsset:
    return dataset_source(
        source.name,
        path,
        data_files=_files(source.data_files, folder),
        data_dir=source.data_dir,
        split=source.split,
        reader_options=source.reader_options,
        group_name=group_name,
        description=source.description,
        partitions_def=partitions_definition(source.name, source.partitions_def),
    )


def _files(files: Any, folder: Path) -> Any:
    """Relative local paths (and globs) resolved against the component's folder."""
    if files is None:
        return None
    if isinstance(files, str):
        return files if "://" in files or os.path.isabs(files) else str(folder / files)
    if isinstance(files, list):
        return [_files(item, folder) for item in files]
    return {split: _files(item, folder) for split, item in files.items()}


def _import(path: str, context: dg.ComponentLoadContext, folder: Path) -> Callable[..., Any]:
    """The function at ``path``: ``pkg.mod.fn``, ``pkg.mod:fn`` or ``.mod.fn`` (this folder)."""
    module_name, _, attribute = path.replace(":", ".").rpartition(".")
    if path.startswith("."):
        module_name = context.defs_relative_module_name(folder) + module_name
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as error:
        raise DatasetAssetDefinitionError(
            f"DatasetPipelineComponent in {folder}: fn {path!r} cannot be imported ({error})."
            " Give 'package.module.function', or '.module.function' for a module in the"
            " component's folder."
        ) from error
    if not callable(function):
        raise DatasetAssetDefinitionError(
            f"DatasetPipelineComponent in {folder}: fn {path!r} is a {type(function).__name__},"
            " not a function."
        )
    return function


def _bound(
    transform: DatasetTransformModel, function: Callable[..., Any]
) -> functools.partial[Any]:
    """``function`` with ``fn_kwargs`` bound; its signature lists only the upstream parameters.

    A `functools.partial` hashes as the function (by value) plus its bound
    arguments, so editing the function or a keyword argument changes the
    transform hash.
    """
    signature = inspect.signature(function)
    unknown = sorted(set(transform.fn_kwargs) - set(signature.parameters))
    takes_kwargs = any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()
    )
    if unknown and not takes_kwargs:
        raise DatasetAssetDefinitionError(
            f"Transform {transform.name!r}: fn_kwargs {unknown} are not parameters of"
            f" {transform.fn} (its parameters: {list(signature.parameters)})."
        )
    bound = functools.partial(function, **transform.fn_kwargs)
    kept = [
        parameter
        for name, parameter in signature.parameters.items()
        if name not in transform.fn_kwargs and parameter.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    bound.__signature__ = signature.replace(parameters=kept)  # pyright: ignore[reportAttributeAccessIssue]
    for attribute in ("__name__", "__qualname__", "__module__"):
        setattr(bound, attribute, getattr(function, attribute))
    return bound


def _check(check: DatasetCheckModel) -> dg.AssetChecksDefinition:
    if check.columns is not None:
        features = Features(
            {
                column: Value(kind)
                if isinstance(kind, str)
                else Features.from_dict({column: kind})[column]
                for column, kind in check.columns.items()
            }
        )
        return schema_check(
            check.asset, features, name=check.name or "schema", blocking=check.blocking
        )
    return row_count_check(
        check.asset,
        min_rows=check.min_rows,
        max_rows=check.max_rows,
        name=check.name or "row_count",
        blocking=check.blocking,
    )

"""@dataset_asset: a dataset transform as a Dagster asset whose version is its fingerprint."""

from __future__ import annotations

import inspect
import typing
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, overload

import dagster as dg

from dagster_ds.errors import DatasetAssetDefinitionError, HiddenInputWarning
from dagster_ds.orchestration._execution import DatasetAssetSpec, execute
from dagster_ds.orchestration._hidden import (
    FingerprintInput,
    check_inputs,
    hidden_reads,
    inputs_cover,
)
from dagster_ds.orchestration.checks import DatasetCheck
from dagster_ds.orchestration.resource import HubTarget
from dagster_ds.orchestration.translator import (
    DatasetAssetProps,
    DatasetTranslator,
    prefix_parts,
    resolve_naming,
)
from dagster_ds.orchestration.versioning import transform_hash

__all__ = ["dataset_asset"]

AssetFunction = Callable[..., Any]


@overload
def dataset_asset(fn: AssetFunction, /) -> dg.AssetsDefinition: ...
@overload
def dataset_asset(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    key_prefix: str | Sequence[str] | None = None,
    ins: Mapping[str, dg.AssetIn] | None = None,
    deps: Iterable[Any] | None = None,
    group_name: str | None = None,
    description: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    tags: Mapping[str, str] | None = None,
    kinds: set[str] | None = None,
    owners: Sequence[str] | None = None,
    automation_condition: dg.AutomationCondition | None = None,
    io_manager_key: str = "io_manager",
    required_resource_keys: set[str] | None = None,
    op_tags: Mapping[str, Any] | None = None,
    retry_policy: dg.RetryPolicy | None = None,
    pool: str | None = None,
    push_to_hub: HubTarget | str | None = None,
    hub_resource_key: str = "hub",
    translator: DatasetTranslator | None = None,
    partitions_def: dg.PartitionsDefinition | None = None,
    version_salt: str | None = None,
    fingerprint_inputs: Sequence[FingerprintInput] = (),
    ignore_args: Iterable[str] = (),
    checks: Sequence[DatasetCheck] = (),
) -> Callable[[AssetFunction], dg.AssetsDefinition]: ...
def dataset_asset(
    fn: AssetFunction | None = None,
    /,
    *,
    name: str | None = None,
    key_prefix: str | Sequence[str] | None = None,
    ins: Mapping[str, dg.AssetIn] | None = None,
    deps: Iterable[Any] | None = None,
    group_name: str | None = None,
    description: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    tags: Mapping[str, str] | None = None,
    kinds: set[str] | None = None,
    owners: Sequence[str] | None = None,
    automation_condition: dg.AutomationCondition | None = None,
    io_manager_key: str = "io_manager",
    required_resource_keys: set[str] | None = None,
    op_tags: Mapping[str, Any] | None = None,
    retry_policy: dg.RetryPolicy | None = None,
    pool: str | None = None,
    push_to_hub: HubTarget | str | None = None,
    hub_resource_key: str = "hub",
    translator: DatasetTranslator | None = None,
    partitions_def: dg.PartitionsDefinition | None = None,
    version_salt: str | None = None,
    fingerprint_inputs: Sequence[FingerprintInput] = (),
    ignore_args: Iterable[str] = (),
    checks: Sequence[DatasetCheck] = (),
) -> dg.AssetsDefinition | Callable[[AssetFunction], dg.AssetsDefinition]:
    """Make a dataset transform a Dagster asset, versioned by fingerprint.

    Each parameter of the function names an upstream asset (a `dataset_asset`
    or a `dataset_source`) and receives its dataset; ``context`` (the
    `AssetExecutionContext`) and ``config`` (annotated with a ``dg.Config``
    class) are passed too when the function takes them. The function returns
    a `Dataset`.

    - The asset's ``code_version`` is the function's transform hash: its code,
      closure, the globals and helper functions it uses (edit a helper in your
      module and the hash changes) and its config class.
    - Its **recipe** is computed before the function runs, from the transform
      hash, the parents' data versions and the config values; it decides the
      skip. When the IO manager (a `DatasetIOManager`) already stores that
      recipe, the function does not run: the materialization records the same
      data version with ``dagster_ds/cache: hit``, and downstream assets do
      their own check.
    - Its **data version** is the content fingerprint of what was stored (xxh3
      over the stored Arrow buffers), known once the dataset is stored. A
      parent re-run that yields identical rows keeps its data version, so its
      children stay fresh.
    - What the function reads besides its arguments enters the fingerprint too:
      the configuration of the resources in ``required_resource_keys`` (not
      the IO manager, the Hub, or a resource class with
      ``affects_dataset_output = False``), and ``fingerprint_inputs``. A
      function whose own code reads ``os.environ``, ``open()`` or
      ``globals()`` gets a `HiddenInputWarning`: declare what it reads.
    - When it runs, ``dagster_ds/changed`` (and the run log) says why: what
      differs from the previous materialization's recipe.
    - Metadata: ``dagster_ds/recipe``, ``dagster_ds/data_version``,
      ``dagster_ds/code_version``, the parents' data versions,
      ``dagster/row_count``, ``dagster/column_schema``, size, a Markdown
      preview, cache hit or miss, duration, and the Hub URL and commit when
      ``push_to_hub`` is set.

    Args:
        fn: The transform (when used as ``@dataset_asset`` without arguments).
        name: The asset's name; default: the function's name.
        key_prefix: Prefix of the asset key.
        ins: `AssetIn` for parameters whose asset key differs from their name.
        deps: Extra upstream assets that are not passed to the function.
        group_name: The asset group.
        description: Default: the function's docstring.
        metadata: Definition metadata shown on the asset's page.
        tags: Asset tags.
        kinds: Kinds shown in the UI (e.g. ``{"huggingface"}``).
        owners: Owners of the asset.
        automation_condition: For example `fingerprint_changed`.
        io_manager_key: The resource key of the `DatasetIOManager`.
        required_resource_keys: Other resources the function uses via ``context``.
        op_tags: Tags of the underlying op (e.g. concurrency settings).
        retry_policy: How to retry a failed materialization.
        pool: A concurrency pool.
        push_to_hub: A repo id or `HubTarget`: push the dataset after each
            materialization through the `HubResource` (a push whose fingerprint
            is already on the Hub makes no commit), once its blocking ``checks``
            passed on it (write-audit-publish).
        hub_resource_key: The resource key of the `HubResource`.
        translator: A `DatasetTranslator`: the asset's key, group, description,
            tags and automation condition when not given here (the arguments
            above win), the upstream parameters' keys, and the data-describing
            metadata of each materialization.
        partitions_def: Partition the asset (daily, hourly, static, dynamic...). Each
            partition is its own version in the store, with its own fingerprint
            (the partition key is part of the recipe) and data version, and is
            skipped when already stored; a backfill runs only the partitions
            whose recipe changed. An upstream partitioned asset is read through
            the input's partition mapping (``ins={"p": dg.AssetIn(partition_mapping=...)}``):
            one partition as its dataset, several as one `Dataset` whose shards
            are the partitions.
        version_salt: Any string, hashed into the code version: change it to
            recompute when something the hash cannot see changed.
        fingerprint_inputs: Environment variables (``dg.EnvVar("NAME")``) and
            files or folders (paths) the function reads; their values and
            contents are hashed at each run.
        ignore_args: Parameters (upstream datasets) or config fields that must
            not count in the fingerprint (verbosity, a debug flag).
        checks: `dataset_check`s run in the asset's step on the candidate
            version, before any Hub push; each is an asset check in the UI. A
            failed blocking check withholds the push (the Hub is untouched) and
            stops the downstream assets. A blocking check declared apart
            (``@dg.asset_check``) runs after the step, so it withholds the push.

    Raises:
        DatasetAssetDefinitionError: The function takes ``*args``/``**kwargs``,
            ``config`` is not annotated with a ``dg.Config`` class, or
            ``ignore_args`` names neither a parameter nor a config field.

    Example:
        >>> from dagster_ds import Dataset
        >>> @dataset_asset(group_name="text")
        ... def lowercased(corpus: Dataset) -> Dataset:
        ...     return corpus.map(lambda row: {"text": row["text"].lower()})
        >>> lowercased.key.to_user_string()
        'lowercased'
    """

    def decorate(function: AssetFunction) -> dg.AssetsDefinition:
        asset_name = name or function.__name__
        translate = translator or DatasetTranslator()
        props = DatasetAssetProps(asset_name, "asset", function, prefix_parts(key_prefix))
        naming = resolve_naming(
            translate,
            props,
            name=name,
            key_prefix=key_prefix,
            group_name=group_name,
            description=description,
            tags=tags,
            automation_condition=automation_condition,
        )
        parameters, takes_context, config_type = _parameters(asset_name, function)
        code_version = transform_hash(function, config_type, version_salt)
        target = HubTarget.coerce(push_to_hub) if push_to_hub is not None else None
        inputs = check_inputs(asset_name, fingerprint_inputs)
        ignored = _ignored(asset_name, ignore_args, parameters, config_type)
        _warn_hidden_reads(asset_name, function, inputs)
        spec = DatasetAssetSpec(
            function=function,
            parameters=parameters,
            takes_context=takes_context,
            config_type=config_type,
            code_version=code_version,
            io_manager_key=io_manager_key,
            hub_resource_key=hub_resource_key,
            push_to_hub=target,
            translator=translate,
            version_salt=version_salt,
            fingerprint_inputs=inputs,
            ignore_args=ignored,
            resource_keys=frozenset(required_resource_keys or ())
            - {io_manager_key, hub_resource_key},
            checks=_unique_checks(asset_name, checks),
        )
        resources = {io_manager_key, *(required_resource_keys or ())}
        if target is not None:
            resources.add(hub_resource_key)
        asset_ins = {
            param: _asset_in(translate, param, (ins or {}).get(param)) for param in parameters
        }
        unknown = sorted(set(ins or {}) - set(parameters))
        if unknown:
            raise DatasetAssetDefinitionError(
                f"dataset_asset {asset_name!r}: ins= names {unknown}, which are not parameters of"
                f" the function (its parameters: {list(parameters)})."
            )
        definition_metadata = {
            "dagster_ds/function": f"{function.__module__}.{function.__qualname__}",
            "dagster_ds/code_version": code_version or "none (unhashable transform)",
            **({"dagster_ds/hub_repo": target.repo_id} if target is not None else {}),
            **(metadata or {}),
        }
        return dg.asset(
            key=naming.key,
            ins=asset_ins,
            deps=deps,
            group_name=naming.group_name,
            description=naming.description,
            metadata=definition_metadata,
            tags=naming.tags,
            kinds=kinds,
            owners=owners,
            automation_condition=naming.automation_condition,
            io_manager_key=io_manager_key,
            required_resource_keys=resources,
            op_tags=op_tags,
            retry_policy=retry_policy,
            pool=pool,
            code_version=code_version,
            partitions_def=partitions_def,
            check_specs=[check.spec(naming.key) for check in spec.checks] or None,
        )(_compute_function(spec, function))

    return decorate(fn) if fn is not None else decorate


def _unique_checks(asset: str, checks: Sequence[DatasetCheck]) -> tuple[DatasetCheck, ...]:
    names = [check.name for check in checks]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise DatasetAssetDefinitionError(
            f"dataset_asset {asset!r}: checks= names {repeated} more than once; give each"
            " dataset_check its own name=."
        )
    return tuple(checks)


def _parameters(asset: str, function: AssetFunction) -> tuple[tuple[str, ...], bool, type | None]:
    """The upstream parameters, whether ``context`` is taken, and the config class."""
    upstream: list[str] = []
    takes_context = False
    config_type: type | None = None
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise DatasetAssetDefinitionError(
                f"dataset_asset {asset!r}: the function takes *{parameter.name}; name each"
                " upstream dataset as its own parameter instead."
            )
        if parameter.name == "context":
            takes_context = True
        elif parameter.name == "config":
            config_type = _config_type(asset, function)
        else:
            upstream.append(parameter.name)
    return tuple(upstream), takes_context, config_type


def _ignored(
    asset: str, names: Iterable[str], parameters: Sequence[str], config_type: type | None
) -> frozenset[str]:
    ignored = frozenset(names)
    fields: Mapping[str, Any] = getattr(config_type, "model_fields", {})
    unknown = sorted(ignored - set(parameters) - set(fields))
    if unknown:
        raise DatasetAssetDefinitionError(
            f"dataset_asset {asset!r}: ignore_args names {unknown}, which are neither parameters"
            f" ({list(parameters)}) nor config fields ({sorted(fields)})."
        )
    return ignored


def _warn_hidden_reads(
    asset: str, function: AssetFunction, inputs: Sequence[FingerprintInput]
) -> None:
    covered = set(inputs_cover(inputs))
    reads = [read for read in hidden_reads(function) if read not in covered]
    if reads:
        warnings.warn(
            f"dataset_asset {asset!r}: its function reads {', '.join(reads)}, which its"
            " fingerprint cannot see: when that changes, the asset is skipped with stale data."
            ' Declare it with fingerprint_inputs=[dg.EnvVar("NAME"), "path/to/file"], or pass'
            " it as config or a resource, or set version_salt= and change it by hand.",
            HiddenInputWarning,
            stacklevel=3,
        )


def _config_type(asset: str, function: AssetFunction) -> type:
    try:
        annotation = typing.get_type_hints(function).get("config")
    except NameError:
        annotation = inspect.signature(function).parameters["config"].annotation
    if isinstance(annotation, type) and issubclass(annotation, dg.Config):
        return annotation
    if isinstance(annotation, str):
        raise DatasetAssetDefinitionError(
            f"dataset_asset {asset!r}: the annotation of parameter 'config', {annotation!r},"
            " cannot be resolved from the function's module; define that Config class at"
            " module level (string annotations cannot see local classes)."
        )
    raise DatasetAssetDefinitionError(
        f"dataset_asset {asset!r}: parameter 'config' is annotated {annotation!r}; annotate it"
        " with a dagster.Config subclass (class MyConfig(dg.Config): ...), or rename it."
    )


def _asset_in(
    translator: DatasetTranslator, parameter: str, given: dg.AssetIn | None
) -> dg.AssetIn:
    if given is None:
        return dg.AssetIn(key=translator.get_asset_key(DatasetAssetProps(parameter, "upstream")))
    return given


def _compute_function(spec: DatasetAssetSpec, function: AssetFunction) -> Callable[..., Any]:
    """The function Dagster calls: its signature declares ``context``, ``config`` and inputs."""

    def compute(context: dg.AssetExecutionContext, **inputs: Any) -> Any:
        yield from execute(spec, context, inputs, None)

    def compute_with_config(context: dg.AssetExecutionContext, config: Any, **inputs: Any) -> Any:
        yield from execute(spec, context, inputs, config)

    if spec.config_type is None:
        wrapper = compute
        wrapper.__annotations__ = {"context": dg.AssetExecutionContext}
    else:
        wrapper = compute_with_config
        wrapper.__annotations__ = {"context": dg.AssetExecutionContext, "config": spec.config_type}
    wrapper.__name__ = function.__name__
    wrapper.__qualname__ = function.__qualname__
    wrapper.__module__ = function.__module__
    planned: Any = wrapper
    planned.dagster_ds_spec = spec  # what `dagster-ds plan` decides from (_plan.py)
    return wrapper

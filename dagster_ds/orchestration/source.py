"""dataset_source: data files as an observable Dagster source asset, versioned by content.

The source's data version is the fingerprint `load_dataset` gives those files:
a hash of their content (local files) or of their storage checksums/ETags
(remote files) and of the reading options. Observing it (in a run, on a
schedule or by a sensor) records that version; when the files did not change,
the version is the same and every downstream asset stays fresh. Downstream
assets receive the loaded dataset (cached by the same fingerprint, so loading
unchanged files again reads the cache).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from dagster_ds.arrow import Dataset
from dagster_ds.errors import DataFilesNotFoundError, DatasetSourceNotFoundError
from dagster_ds.formats import DataFiles
from dagster_ds.load import load_dataset
from dagster_ds.orchestration._source_partitions import (
    check_templates,
    load_partitions,
    observer,
    remember_observed,
)
from dagster_ds.orchestration._source_versions import load_source
from dagster_ds.orchestration.metadata import DatasetMetadataKey
from dagster_ds.orchestration.translator import (
    DatasetAssetProps,
    DatasetTranslator,
    prefix_parts,
    resolve_naming,
)
from dagster_ds.streaming import IterableDataset

__all__ = ["dataset_source"]


@dataclass(frozen=True)
class _SourceSpec:
    asset: str
    path: str
    data_files: DataFiles | None
    data_dir: str | None
    split: str
    streaming: bool
    storage_options: Mapping[str, Any] | None
    reader_options: Mapping[str, Any] = field(default_factory=dict[str, Any])
    name: str | None = None
    revision: str | None = None
    token: str | None = field(default=None, repr=False)
    endpoint: str | None = None
    partition: str | None = None  # of a partitioned source, its templates filled in

    def load(self) -> Dataset | IterableDataset:
        """The source's split, loaded from its files (each file's table from the cache)."""
        with self.naming_missing_files():
            return load_dataset(
                self.path,
                self.name,
                data_dir=self.data_dir,
                data_files=self.data_files,
                split=self.split,
                streaming=self.streaming,
                storage_options=self.storage_options,
                revision=self.revision,
                token=self.token,
                endpoint=self.endpoint,
                **self.reader_options,
            )

    @contextlib.contextmanager
    def naming_missing_files(self) -> Iterator[None]:
        """Say which source found no data files (listing them, or loading them)."""
        try:
            yield
        except DataFilesNotFoundError as error:
            raise DatasetSourceNotFoundError(
                f"dataset_source {self.asset!r}: {error} Put data files there, or fix the"
                " source's path/data_files."
            ) from error

    def describe(self) -> str:
        files = self.data_files if self.data_files is not None else self.data_dir
        text = f"{self.path!r}" + (f" with data files {files!r}" if files is not None else "")
        if self.name is not None:
            text += f", config {self.name!r}"
        return text + (f" at revision {self.revision!r}" if self.revision is not None else "")


class _SourceLoader(dg.IOManager):
    """Loads a dataset source for the assets downstream of it (sources are never stored)."""

    def __init__(
        self, spec: _SourceSpec, partitions_def: dg.PartitionsDefinition | None = None
    ) -> None:
        self._spec = spec
        self._partitions_def = partitions_def

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        """Sources have no outputs to store."""

    def load_input(self, context: dg.InputContext) -> Dataset | IterableDataset:
        """Load the source's files into the dataset store (once per content)."""
        with _into_store(context.resources, context.instance):
            if self._partitions_def is not None and context.has_asset_partitions:
                keys = list(context.asset_partition_keys)
                keep = _keep_versions(context.resources)
                dataset = load_partitions(self._spec, self._partitions_def, keys, keep)
                remember_observed(context, dataset, keys)
                return dataset
            return load_source(self._spec, _keep_versions(context.resources))


def _keep_versions(resources: Any) -> int | None:
    """The ``keep_versions`` of the run's `DatasetStore` (None: keep all, or another manager)."""
    from dagster_ds.orchestration.io_manager import DatasetStore

    store = getattr(resources, "io_manager", None)
    return store.keep_versions if isinstance(store, DatasetStore) else None


def _into_store(
    resources: Any, instance: dg.DagsterInstance | None
) -> AbstractContextManager[None]:
    """Where a source loads: the run's dataset store, shared by every executor process.

    That is the ``io_manager`` when it is a `DatasetStore` (a shared URL under a
    distributed executor), else the instance's default store.
    """
    from dagster_ds.cache import cache_root
    from dagster_ds.orchestration.io_manager import DatasetStore, default_store_root

    store = getattr(resources, "io_manager", None)
    if isinstance(store, DatasetStore):
        return store.cache.as_default()
    return cache_root(default_store_root(instance))


def dataset_source(
    name: str,
    path: str,
    *,
    data_files: DataFiles | None = None,
    data_dir: str | None = None,
    split: str = "train",
    streaming: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    reader_options: Mapping[str, Any] | None = None,
    config_name: str | None = None,
    revision: str | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    key_prefix: str | Sequence[str] | None = None,
    group_name: str | None = None,
    description: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    automation_condition: dg.AutomationCondition | None = None,
    translator: DatasetTranslator | None = None,
    partitions_def: dg.PartitionsDefinition | None = None,
) -> dg.SourceAsset:
    """An observable source asset over data files or a Hub dataset, versioned by its fingerprint.

    The arguments are `load_dataset`'s: ``path`` is a format name with
    ``data_files`` (a path, glob, list or dict of splits; local or any fsspec
    URL), a file or folder, or a Hub dataset repository (``"namespace/name"``).
    Observing the source loads it (from the cache if the files did not change)
    and records its fingerprint as the data version, with the row count, schema
    and a preview. That fingerprint comes from the files' content (local files),
    their storage checksums (remote files) or the resolved Hub commit (a Hub
    repository), so an unchanged source keeps its data version and nothing
    downstream becomes stale.

    Args:
        name: The asset's name (downstream parameters use it).
        path: A format name (``"json"``, ``"parquet"``...) or a file/folder/URL.
        data_files: Files, globs or ``{split: files}`` to read.
        data_dir: A folder inside ``path`` to read.
        split: Which split the asset is.
        streaming: Load as a stream instead of a memory-mapped dataset.
        storage_options: fsspec options for remote files.
        reader_options: Options for the format's reader (``field=``...).
        config_name: The config of a Hub repository (default: its default config).
        revision: A Hub repository's branch, tag or commit.
        token: A Hub token for private repositories (read it from the environment;
            it is never recorded).
        endpoint: The Hub (default ``HF_ENDPOINT``, else huggingface.co).
        key_prefix: Prefix of the asset key.
        group_name: The asset group.
        description: Default: where the data comes from.
        metadata: Definition metadata.
        automation_condition: When to observe it, e.g.
            ``dg.AutomationCondition.cron_tick_passed("0 * * * *")``.
        translator: A `DatasetTranslator`: the key, group, description and
            automation condition when not given here, and the data-describing
            metadata of observations.
        partitions_def: Partition the source (daily, hourly, static, dynamic...).
            ``data_files``/``data_dir`` are then templates: ``{partition_key}``
            and, for time windows, ``{start}``/``{end}`` (``{start:%Y/%m/%d}``).
            Observing records each partition's data version (its files' content
            fingerprint; partitions without files are skipped); a downstream
            partition reads the partitions its partition mapping selects.

    Returns:
        An observable source asset; select it in a run to observe it.

    Example:
        >>> docs = dataset_source("docs", "json", data_files="data/*.jsonl")
        >>> docs.key.to_user_string()
        'docs'
    """
    spec = _SourceSpec(
        asset=name,
        path=path,
        data_files=data_files,
        data_dir=data_dir,
        split=split,
        streaming=streaming,
        storage_options=storage_options,
        reader_options=dict(reader_options or {}),
        name=config_name,
        revision=revision,
        token=token,
        endpoint=endpoint,
    )
    describe = translator or DatasetTranslator()
    if partitions_def is not None:
        check_templates(name, data_files, data_dir)
    props = DatasetAssetProps(
        name,
        "source",
        key_prefix=prefix_parts(key_prefix),
        source=f"{spec.describe()}, split {split!r}",
    )
    naming = resolve_naming(
        describe,
        props,
        name=None,
        key_prefix=key_prefix,
        group_name=group_name,
        description=description,
        tags=None,
        automation_condition=automation_condition,
    )

    def observe(context: dg.AssetExecutionContext) -> dg.ObserveResult:
        with _into_store(context.resources, context.instance):
            dataset = load_source(spec, _keep_versions(context.resources))
        return dg.ObserveResult(
            data_version=dg.DataVersion(dataset.fingerprint),
            metadata={
                **describe.get_metadata(dataset),
                DatasetMetadataKey.DATA_VERSION.value: dataset.fingerprint,
            },
        )

    def observe_partitions(context: dg.OpExecutionContext) -> dg.DataVersionsByPartition:
        assert partitions_def is not None
        with _into_store(context.resources, context.instance):
            return observer(spec, partitions_def)(context)

    observe_fn: Any = observe if partitions_def is None else observe_partitions
    observe_fn.dagster_ds_spec = spec  # what a refresh tick observes itself (_refresh.py)
    observe_fn.__name__ = naming.key.path[-1]
    loader_key = f"{naming.key.to_python_identifier()}__dagster_ds_source"
    # observable_source_asset (and its resource_defs) are Dagster beta APIs, and the way
    # Dagster offers to make a root's change visible to staleness. Each source brings
    # its own loader, under a key of its own.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        # (Keywords only: given the function positionally, Dagster ignores them all.)
        decorator = dg.observable_source_asset(
            name=naming.key.path[-1],
            key_prefix=list(naming.key.path[:-1]) or None,
            group_name=naming.group_name,
            description=naming.description,
            metadata={"dagster_ds/source": spec.describe(), **(metadata or {})},
            io_manager_key=loader_key,
            # Both load into the run's store: the io_manager when it is a DatasetStore.
            required_resource_keys={"io_manager"},
            resource_defs={
                loader_key: dg.IOManagerDefinition(
                    resource_fn=lambda _: _SourceLoader(spec, partitions_def),
                    required_resource_keys={"io_manager"},
                )
            },
            automation_condition=naming.automation_condition,
            partitions_def=partitions_def,
        )
        return decorator(observe_fn)

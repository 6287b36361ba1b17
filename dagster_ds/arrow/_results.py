"""Running a transform through the cache: fingerprint it, look it up, build it once."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.arrow._entries import TableSink, read_indices, read_table, write_indices
from dagster_ds.arrow._lineage import LineageStep
from dagster_ds.cache import CacheEntry, CacheStore, EntryWriter
from dagster_ds.errors import InvalidFingerprintError
from dagster_ds.features import Features
from dagster_ds.fingerprint import HashNode, fingerprint_transform

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset

_FINGERPRINT = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class Transform:
    """A transform about to run: its name, the fingerprint of its result, its hash tree.

    The tree is None when the transform could not be hashed and got a random
    fingerprint: such a result is computed every time and never reused.
    """

    name: str
    parents: tuple[str, ...]
    fingerprint: str
    tree: HashNode | None

    @property
    def reusable(self) -> bool:
        return self.tree is not None

    def step(self) -> LineageStep:
        return LineageStep(self.name, self.fingerprint, self.parents)

    def metadata(self) -> dict[str, Any]:
        return {
            "transform": self.name,
            "parents": list(self.parents),
            "hash_tree": self.tree.to_dict() if self.tree is not None else None,
        }


def plan(
    parent: Dataset, name: str, args: Mapping[str, Any], new_fingerprint: str | None = None
) -> Transform:
    """Fingerprint ``name(parent, **args)``, or take the caller's ``new_fingerprint``."""
    parents = (parent.fingerprint,)
    if new_fingerprint is not None:
        if not _FINGERPRINT.fullmatch(new_fingerprint):
            raise InvalidFingerprintError(
                f"new_fingerprint={new_fingerprint!r} is not 32 lowercase hexadecimal "
                "characters; pass for example dagster_ds.Hasher.hash(<what identifies the result>)."
            )
        tree = HashNode("transform", name, new_fingerprint)
        return Transform(name, parents, new_fingerprint, tree)
    fingerprint, tree = fingerprint_transform(parent.fingerprint, name, args)
    return Transform(name, parents, fingerprint, tree)


def run(
    transform: Transform,
    build: Callable[[EntryWriter], Mapping[str, Any]],
    *,
    load_from_cache_file: bool = True,
) -> CacheEntry:
    """The cache entry of ``transform``, built by ``build(writer)`` unless already cached.

    ``build`` returns metadata to record (row count, features...). With
    ``load_from_cache_file=False`` an existing entry is replaced, unless it is
    in use, in which case the new result is kept under a random name.
    """
    store = CacheStore()
    if not transform.reusable:
        store = CacheStore(random_names=True)
    elif not load_from_cache_file and not store.remove(transform.fingerprint):
        existing = store.lookup(transform.fingerprint)
        if existing is not None:
            existing.close()
            store = CacheStore(random_names=True)

    def build_entry(writer: EntryWriter) -> None:
        writer.update_metadata(build(writer))

    return store.get_or_create(transform.fingerprint, build_entry, metadata=transform.metadata())


def table_result(
    parent: Dataset | None,
    transform: Transform,
    write: Callable[[TableSink], None],
    features_for: Callable[[pa.Schema], Features],
    *,
    load_from_cache_file: bool = True,
) -> Dataset:
    """A dataset whose table ``write(sink)`` produces, cached under the transform.

    ``features_for(schema)`` gives the result's features from the unified
    schema of everything written.
    """
    from dagster_ds.arrow._dataset import Dataset

    def build(writer: EntryWriter) -> Mapping[str, Any]:
        sink = TableSink(writer)
        write(sink)
        features = features_for(sink.close())
        # The list form keeps the column order (manifests are written with sorted keys).
        return {"kind": "table", "num_rows": sink.num_rows, "features": features.to_yaml_list()}

    entry = run(transform, build, load_from_cache_file=load_from_cache_file)
    features = Features.from_yaml_list(entry.metadata["features"])  # type: ignore[arg-type]
    table = read_table(entry, features.arrow_schema)
    dataset = Dataset._derived(  # pyright: ignore[reportPrivateUsage]
        None,
        data=table,
        indices=None,
        fingerprint=transform.fingerprint,
        features=features,
        entries=[entry],
    )
    if parent is not None:
        dataset._split = parent.split  # pyright: ignore[reportPrivateUsage]
        dataset._lineage = (*parent.lineage, transform.step())  # pyright: ignore[reportPrivateUsage]
    return dataset


def indices_result(
    parent: Dataset,
    transform: Transform,
    compute: Callable[[], pa.Array],
    *,
    load_from_cache_file: bool = True,
) -> Dataset:
    """``parent`` seen through the logical positions ``compute()`` returns, cached."""
    from dagster_ds.arrow._dataset import Dataset

    def build(writer: EntryWriter) -> Mapping[str, Any]:
        positions = compute()
        physical = parent._indices.take(positions) if parent._indices is not None else positions  # pyright: ignore[reportPrivateUsage]
        write_indices(writer, physical)
        return {"kind": "indices", "num_rows": len(physical)}

    entry = run(transform, build, load_from_cache_file=load_from_cache_file)
    return Dataset._derived(  # pyright: ignore[reportPrivateUsage]
        parent,
        data=parent.data,
        indices=read_indices(entry),
        fingerprint=transform.fingerprint,
        entries=[entry],
        step=transform.step(),
    )


def derived(
    parent: Dataset, transform: Transform, data: pa.Table, features: Features | None = None
) -> Dataset:
    """A dataset computed cheaply from ``parent`` without the cache (renames, column selection)."""
    from dagster_ds.arrow._dataset import Dataset

    return Dataset._derived(  # pyright: ignore[reportPrivateUsage]
        parent,
        data=data,
        indices=parent._indices,  # pyright: ignore[reportPrivateUsage]
        fingerprint=transform.fingerprint,
        features=features,
        step=transform.step(),
    )

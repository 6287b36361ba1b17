"""What a dataset asset function reads besides its arguments: resources, declared inputs.

Three things can change a function's result without changing its code or its
parents, and so would give a false cache hit:

- the configuration of the resources it requires (``context.resources``):
  hashed, except IO managers, the `HubResource` and resources whose class sets
  ``affects_dataset_output = False``;
- environment variables and files it reads itself: declared with
  ``fingerprint_inputs=[dg.EnvVar("NAME"), "path/to/file"]``, their value or
  content is hashed at each run;
- reads the hash cannot see at all (``os.environ``, ``open()``, ``globals()``
  in the function's own code): `hidden_reads` finds them for a warning.
"""

from __future__ import annotations

import builtins
import io
import os
import random
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FunctionType, ModuleType
from typing import Any

import dagster as dg
import xxhash

from dagster_ds.errors import DatasetAssetDefinitionError, UnhashableError
from dagster_ds.fingerprint import Hasher, HashNode, global_references
from dagster_ds.orchestration.resource import HubResource

FingerprintInput = str | os.PathLike[str]

# Resource fields whose values are never shown in explanations (hashes only).
_SECRET_NAME = re.compile(r"token|secret|password|passwd|credential|api_?key|private", re.I)
_CHUNK = 1 << 20


@dataclass(frozen=True)
class HiddenInputs:
    """Digests of what an asset function reads besides its arguments, and their trees.

    Attributes:
        digests: By kind (``resources``, ``inputs``): each item's digest.
        trees: One explanation node per item (``resource 'params'``, ``env 'NAME'``...).
    """

    digests: Mapping[str, Mapping[str, str]]
    trees: Mapping[str, HashNode]


def check_inputs(asset: str, inputs: Sequence[FingerprintInput]) -> tuple[FingerprintInput, ...]:
    """``fingerprint_inputs`` as given, validated: env vars (`dg.EnvVar`) and paths."""
    for item in inputs:
        if not isinstance(item, str | os.PathLike):
            raise DatasetAssetDefinitionError(
                f"dataset_asset {asset!r}: fingerprint_inputs item {item!r} is neither an"
                ' environment variable (dg.EnvVar("NAME")) nor a file path (a str or Path).'
            )
    return tuple(inputs)


def hidden_inputs(resources: Mapping[str, Any], inputs: Sequence[FingerprintInput]) -> HiddenInputs:
    """Digest the resources' configuration and the declared inputs, now.

    Raises:
        DatasetAssetDefinitionError: A resource cannot be hashed; the message
            says how to mark it as not affecting the output.
    """
    digests: dict[str, dict[str, str]] = {"resources": {}, "inputs": {}}
    trees: dict[str, HashNode] = {}
    for key in sorted(resources):
        node = _resource_node(key, resources[key])
        digests["resources"][key] = node.digest
        trees[node.label] = node
    for item in inputs:
        node = _input_node(item)
        digests["inputs"][node.label] = node.digest
        trees[node.label] = node
    return HiddenInputs(digests, trees)


def affects_output(resource: Any) -> bool:
    """Whether a resource's configuration can change what an asset produces."""
    if isinstance(resource, dg.IOManager | dg.ConfigurableIOManagerFactory | HubResource):
        return False
    return bool(getattr(resource, "affects_dataset_output", True))


def _resource_node(key: str, resource: Any) -> HashNode:
    label = f"resource '{key}'"
    fields = _resource_fields(resource)
    try:
        if fields is None:
            node = Hasher.describe(resource)
            return HashNode("resource", label, node.digest, {"value": node})
        components = {
            f"field '{name}'": _field_node(name, value) for name, value in sorted(fields.items())
        }
    except UnhashableError as error:
        raise DatasetAssetDefinitionError(
            f"Resource {key!r} enters the fingerprint of the dataset assets that require it, but"
            f" it cannot be hashed: {error.explanation}. Make it a dg.ConfigurableResource, or,"
            " if it cannot change what the assets produce, set `affects_dataset_output = False`"
            " on its class."
        ) from error
    digest = Hasher.hash({name: node.digest for name, node in components.items()})
    return HashNode("resource", label, digest, components)


def _resource_fields(resource: Any) -> dict[str, Any] | None:
    """A configurable resource's field values (nested resources as their fields)."""
    fields: Mapping[str, Any] | None = getattr(type(resource), "model_fields", None)
    if fields is None:
        return None
    values: dict[str, Any] = {}
    for name in fields:
        value = getattr(resource, name, None)
        nested = _resource_fields(value) if hasattr(type(value), "model_fields") else None
        values[name] = nested if nested is not None else value
    return values


def _field_node(name: str, value: Any) -> HashNode:
    node = Hasher.describe(value)
    if _SECRET_NAME.search(name):  # never show a secret's value, even in a stored tree
        return HashNode(node.kind, "<hidden>", node.digest)
    return node


def _input_node(item: FingerprintInput) -> HashNode:
    if isinstance(item, dg.EnvVar):
        name = item.env_var_name
        value = os.environ.get(name)
        text = "<unset>" if value is None else "set:" + value
        return HashNode("input", f"env '{name}'", xxhash.xxh3_128_hexdigest(text.encode()))
    path = Path(item)
    return HashNode("input", f"file '{path}'", _path_digest(path))


def _path_digest(path: Path) -> str:
    """The content of a file, or of every file under a folder (with relative names)."""
    digest = xxhash.xxh3_128()
    if path.is_dir():
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(str(file.relative_to(path)).encode() + b"\0")
            _feed(digest, file)
    elif path.is_file():
        _feed(digest, path)
    else:
        digest.update(b"<missing>")
    return digest.hexdigest()


def _feed(digest: Any, file: Path) -> None:
    with file.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    digest.update(b"\0")


# -- reads the hash cannot see -----------------------------------------------

_ENV_NAMES = frozenset({"environ", "environb", "getenv", "getenvb"})


def hidden_reads(function: Callable[..., Any]) -> list[str]:
    """What ``function``'s own code reads that no hash sees: ``os.environ``, ``open()``...

    Only the function's code (its lambdas and nested functions included) is
    scanned, not the helpers it calls.
    """
    code = getattr(function, "__code__", None)
    namespace: Mapping[str, Any] = getattr(function, "__globals__", {})
    if not isinstance(code, CodeType):
        return []
    found = {_hidden_read(chain, namespace) for chain in global_references(code)}
    return sorted(read for read in found if read is not None)


def _hidden_read(chain: tuple[str, ...], namespace: Mapping[str, Any]) -> str | None:
    head = chain[0]
    value = namespace.get(head, getattr(builtins, head, None))
    if value is builtins.open or value is io.open:
        return "open()"
    if value is builtins.globals:
        return "globals()"
    if value is os.environ or value is os.getenv:
        return "os.environ"
    if isinstance(value, ModuleType) and len(chain) > 1:
        return _module_read(value, chain[1:])
    if isinstance(value, FunctionType | type(random.random)) and _is_global_rng(value):
        return "the global random number generator"
    return None


def _module_read(module: ModuleType, rest: tuple[str, ...]) -> str | None:
    if module is os and rest[0] in _ENV_NAMES:
        return "os.environ"
    if module is random and rest[0] not in ("Random", "SystemRandom"):
        return "the global random number generator"
    numpy = sys.modules.get("numpy")
    seeded = ("default_rng", "Generator", "RandomState", "SeedSequence")
    if module is numpy is not None and rest[0] == "random" and rest[1:2] and rest[1] not in seeded:
        return "the global random number generator"
    return None


def _is_global_rng(value: Any) -> bool:
    return getattr(value, "__self__", None) is getattr(random, "_inst", object())


def inputs_cover(inputs: Sequence[FingerprintInput]) -> Iterator[str]:
    """The hidden reads that declared ``fingerprint_inputs`` account for."""
    if any(isinstance(item, dg.EnvVar) for item in inputs):
        yield "os.environ"
    if any(not isinstance(item, dg.EnvVar) for item in inputs):
        yield "open()"

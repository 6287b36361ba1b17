"""Hash trees (what a hash is made of) and explanations of how two of them differ."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import xxhash


@dataclass(frozen=True)
class HashNode:
    """One hashed object and the named components its digest was made from.

    A function's components are ``code``, ``global 'name'``, ``closure variable
    'name'``, ``default 'name'``...; a transform's are ``parent fingerprint``,
    ``transform`` and ``argument 'name'``. Leaves have no components. Trees are
    plain data: `to_dict` / `from_dict` round-trip through JSON, so a tree can be
    stored next to a cached result and explained later, in another process.

    Attributes:
        kind: What was hashed: ``function``, ``class``, ``transform``, ``value``...
        label: A readable name, for example ``<function clean>``.
        digest: 32 hexadecimal characters.
        components: The named sub-trees the digest was made from.
    """

    kind: str
    label: str
    digest: str
    components: Mapping[str, HashNode] = field(default_factory=dict[str, "HashNode"])

    def to_dict(self) -> dict[str, Any]:
        """This tree as JSON-compatible data."""
        data: dict[str, Any] = {"kind": self.kind, "label": self.label, "digest": self.digest}
        if self.components:
            data["components"] = {name: node.to_dict() for name, node in self.components.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HashNode:
        """Rebuild a tree written by `to_dict`."""
        components: Mapping[str, Any] = data.get("components", {})
        return cls(
            kind=str(data["kind"]),
            label=str(data["label"]),
            digest=str(data["digest"]),
            components={name: cls.from_dict(node) for name, node in components.items()},
        )


def combine(kind: str, components: Mapping[str, HashNode]) -> str:
    """The digest of a node made of ``components``, independent of their order."""
    digest = xxhash.xxh3_128(kind.encode())
    for name in sorted(components):
        digest.update(b"\0" + name.encode() + b"\0" + components[name].digest.encode())
    return digest.hexdigest()


def leaf(kind: str, label: str, text: str) -> HashNode:
    """A node without components whose digest is the hash of ``text``."""
    return HashNode(kind, label, xxhash.xxh3_128_hexdigest(f"{kind}\0{text}".encode()))


Change = Literal["changed", "added", "removed"]


@dataclass(frozen=True)
class Difference:
    """One component that differs between two hash trees.

    Attributes:
        path: Component names from the root down, for example
            ``("global 'clean'", "code")``.
        change: ``changed``, or ``added``/``removed`` when only one side has it.
        old: The old digest, if the old tree has this component.
        new: The new digest, if the new tree has this component.
    """

    path: tuple[str, ...]
    change: Change
    old: str | None
    new: str | None

    def __str__(self) -> str:
        where = " → ".join(self.path) if self.path else "the value itself"
        return f"{where}: {self.change}"


@dataclass(frozen=True)
class Explanation:
    """Why two hashes differ, as the deepest components that differ.

    Attributes:
        old: The old tree.
        new: The new tree.
        differences: The differing components, in a stable order; empty when
            the digests are equal.
    """

    old: HashNode
    new: HashNode
    differences: tuple[Difference, ...]

    @property
    def same(self) -> bool:
        """Whether the two digests are equal."""
        return self.old.digest == self.new.digest

    def __str__(self) -> str:
        if self.same:
            return f"{self.new.label}: unchanged ({self.new.digest})"
        lines = [f"{self.new.label}: {self.old.digest} → {self.new.digest}"]
        lines += [f"  - {difference}" for difference in self.differences]
        return "\n".join(lines)


def diff_trees(old: HashNode, new: HashNode) -> Explanation:
    """Compare two trees and list the deepest components that differ."""
    return Explanation(old, new, tuple(_differences(old, new, ())))


def _differences(old: HashNode, new: HashNode, path: tuple[str, ...]) -> list[Difference]:
    if old.digest == new.digest:
        return []
    if not old.components or not new.components or old.kind != new.kind:
        return [Difference(path, "changed", old.digest, new.digest)]
    found: list[Difference] = []
    for name in sorted(set(old.components) | set(new.components)):
        before, after = old.components.get(name), new.components.get(name)
        if before is None and after is not None:
            found.append(Difference((*path, name), "added", None, after.digest))
        elif after is None and before is not None:
            found.append(Difference((*path, name), "removed", before.digest, None))
        elif before is not None and after is not None:
            found += _differences(before, after, (*path, name))
    return found or [Difference(path, "changed", old.digest, new.digest)]

"""Lineage: the transforms that made a dataset, recorded for cards and metadata."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LineageStep:
    """One transform in a dataset's history.

    Attributes:
        transform: The transform's name, for example ``"map"``.
        fingerprint: The fingerprint of the dataset it produced.
        parents: The fingerprints of the datasets it read.
        columns: Each output column with the parent columns its values came from,
            in output order; None when not recorded, which a reader must take as
            "every output column depends on every parent column". A step with
            several parents names a parent column ``"<i>:<column>"``, ``i`` the
            parent's position in ``parents`` (see `source_name`); read them back
            with `parent_columns`.

    Example:
        >>> step = LineageStep("map", "f" * 32, ("e" * 32,), (("n", ("text",)),))
        >>> step.column_sources()
        {'n': ('text',)}
    """

    transform: str
    fingerprint: str
    parents: tuple[str, ...]
    columns: tuple[tuple[str, tuple[str, ...]], ...] | None = None

    def column_sources(self) -> dict[str, tuple[str, ...]] | None:
        """Each output column and the parent columns it came from (None: not recorded)."""
        return None if self.columns is None else dict(self.columns)

    def parent_columns(self, column: str) -> tuple[tuple[str, str], ...] | None:
        """The (parent fingerprint, parent column) pairs ``column`` came from (None: unknown).

        Unknown when the step recorded no columns, or not this one.

        Example:
            >>> step = LineageStep("concatenate", "c" * 32, ("a" * 32, "b" * 32))
            >>> step = step.with_columns({"x": ["0:x", "1:x"]})
            >>> [(parent[0], name) for parent, name in step.parent_columns("x")]
            [('a', 'x'), ('b', 'x')]
        """
        sources = self.column_sources()
        if sources is None or column not in sources:
            return None
        if len(self.parents) == 1:
            return tuple((self.parents[0], name) for name in sources[column])
        pairs: list[tuple[str, str]] = []
        for source in sources[column]:
            index, _, name = source.partition(":")
            pairs.append((self.parents[int(index)], name))
        return tuple(pairs)

    @staticmethod
    def source_name(parent: int, column: str, parents: int) -> str:
        """How a step with ``parents`` parents names column ``column`` of parent ``parent``.

        Example:
            >>> LineageStep.source_name(1, "label", parents=2)
            '1:label'
        """
        return column if parents == 1 else f"{parent}:{column}"

    def with_columns(self, sources: Mapping[str, Sequence[str]]) -> LineageStep:
        """This step with its column sources recorded (output column -> parent columns)."""
        columns = tuple((name, tuple(parents)) for name, parents in sources.items())
        return LineageStep(self.transform, self.fingerprint, self.parents, columns)

    def to_dict(self) -> dict[str, Any]:
        """This step as JSON data (``columns`` only when recorded)."""
        data: dict[str, Any] = {
            "transform": self.transform,
            "fingerprint": self.fingerprint,
            "parents": list(self.parents),
        }
        if self.columns is not None:
            data["columns"] = {name: list(parents) for name, parents in self.columns}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LineageStep:
        """Rebuild a step written by `to_dict`."""
        step = cls(str(data["transform"]), str(data["fingerprint"]), tuple(data["parents"]))
        columns = data.get("columns")
        return step if columns is None else step.with_columns(columns)

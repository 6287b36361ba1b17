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
            "every output column depends on every parent column".

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

"""Lineage: the transforms that made a dataset, recorded for cards and metadata."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LineageStep:
    """One transform in a dataset's history.

    Attributes:
        transform: The transform's name, for example ``"map"``.
        fingerprint: The fingerprint of the dataset it produced.
        parents: The fingerprints of the datasets it read.
    """

    transform: str
    fingerprint: str
    parents: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """This step as JSON data."""
        return {
            "transform": self.transform,
            "fingerprint": self.fingerprint,
            "parents": list(self.parents),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LineageStep:
        """Rebuild a step written by `to_dict`."""
        return cls(str(data["transform"]), str(data["fingerprint"]), tuple(data["parents"]))

"""DatasetInfo, NamedSplit and Split: the anchor's dataset metadata and split names.

`NamedSplit` is a ``str`` (``NamedSplit("train") == "train"``), so it can be given
wherever a split name is expected; `Split` holds the usual ones.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dagster_ds.features import Features


class NamedSplit(str):
    """A split name, as the anchor's ``NamedSplit``; it is the ``str`` itself.

    Example:
        >>> NamedSplit("train") == "train", str(Split.TEST)
        (True, 'test')
    """

    __slots__ = ()

    @property
    def name(self) -> str:
        """The split's name."""
        return str(self)

    def __repr__(self) -> str:
        return f"NamedSplit({str(self)!r})"


class Split:
    """The usual split names: ``Split.TRAIN``, ``Split.VALIDATION``, ``Split.TEST``, ``Split.ALL``.

    Example:
        >>> Split.TRAIN, Split("test")
        (NamedSplit('train'), NamedSplit('test'))
    """

    TRAIN = NamedSplit("train")
    TEST = NamedSplit("test")
    VALIDATION = NamedSplit("validation")
    ALL = NamedSplit("all")

    def __new__(cls, name: str) -> NamedSplit:  # type: ignore[misc]
        return NamedSplit(name)


@dataclass
class DatasetInfo:
    """What is known about a dataset besides its rows (the anchor's ``DatasetInfo``).

    `Dataset.info` gives one (features, split sizes); fields the anchor fills from
    its loading scripts stay empty unless set.

    Example:
        >>> info = DatasetInfo(description="demo", features=Features({"a": Value("int8")}))
        >>> DatasetInfo.from_dict(info.to_dict()) == info
        True
    """

    description: str = ""
    citation: str = ""
    homepage: str = ""
    license: str = ""
    features: Features | None = None
    post_processed: Any = None
    supervised_keys: Any = None
    builder_name: str | None = None
    dataset_name: str | None = None
    config_name: str | None = None
    version: str | None = None
    splits: dict[str, Any] | None = None
    download_checksums: dict[str, Any] | None = None
    download_size: int | None = None
    post_processing_size: int | None = None
    dataset_size: int | None = None
    size_in_bytes: int | None = None
    extra: dict[str, Any] = field(default_factory=dict[str, Any], repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The anchor's JSON form (``dataset_info.json``)."""
        form = {
            f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"
        }
        form["features"] = self.features.to_dict() if self.features is not None else None
        return {**form, **self.extra}

    @classmethod
    def from_dict(cls, dataset_info_dict: Mapping[str, Any]) -> DatasetInfo:
        """A DatasetInfo from its JSON form; unknown keys are kept in ``extra``."""
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {key: value for key, value in dataset_info_dict.items() if key in names}
        if known.get("features") is not None:
            known["features"] = Features.from_dict(known["features"])
        extra = {key: value for key, value in dataset_info_dict.items() if key not in names}
        return cls(**known, extra=extra)

    def copy(self) -> DatasetInfo:
        """A deep copy."""
        return copy.deepcopy(self)


#: The fields of `DatasetInfo` a dataset keeps through its transforms (as the anchor).
PROSE = ("description", "citation", "homepage", "license")


def prose_of(info: Any) -> dict[str, str]:
    """The non-empty `PROSE` fields of ``info`` (a `DatasetInfo`, its JSON form, or None)."""
    get = info.get if isinstance(info, Mapping) else functools.partial(getattr, info)
    values = {name: get(name, "") or "" for name in PROSE}
    return {name: value for name, value in values.items() if value}


def merged_prose(parts: list[Mapping[str, str]]) -> dict[str, str]:
    """The anchor's ``DatasetInfo.from_merge``: each field's distinct values, in order."""
    if all(part == parts[0] for part in parts):
        return dict(parts[0]) if parts else {}
    merged = {
        name: "\n\n".join(dict.fromkeys(part.get(name, "") for part in parts)).strip()
        for name in PROSE
    }
    return {name: value for name, value in merged.items() if value}


class InfoMethods:
    """Mixed into `Dataset`: ``info`` and the anchor's shortcuts to its fields.

    ``_prose``: the description, citation, homepage and license the dataset was made
    with (``info=``), handed on to what is derived from it.
    """

    _prose: Mapping[str, str] = {}

    @property
    def info(self) -> DatasetInfo:
        """A `DatasetInfo` with this dataset's features and split size.

        Example:
            >>> Dataset.from_dict({"a": [1]}).info.features
            {'a': Value('int64')}
        """
        features: Features = self.features  # type: ignore[attr-defined]
        split: str | None = self.split  # type: ignore[attr-defined]
        rows: int = self.num_rows  # type: ignore[attr-defined]
        splits = {split: {"name": split, "num_examples": rows}} if split else None
        info = DatasetInfo(features=features, splits=splits)
        return dataclasses.replace(info, **self._prose)

    @property
    def description(self) -> str:
        """The info's description (given with ``info=``, kept through transforms)."""
        return self.info.description

    @property
    def citation(self) -> str:
        """The info's citation."""
        return self.info.citation

    @property
    def homepage(self) -> str:
        """The info's homepage."""
        return self.info.homepage

    @property
    def license(self) -> str:
        """The info's license."""
        return self.info.license

"""The dataset card (README.md): its YAML header, updated as the anchor's push_to_hub does.

The YAML keeps everything already there and updates three keys:

``dataset_info``
    Per config: ``features`` (the anchor's YAML form), ``splits`` (name,
    num_bytes, num_examples), ``download_size``, ``dataset_size``. One config is
    written as a mapping, several as a list sorted by ``config_name``.
``configs``
    Per config: ``data_files`` as ``[{split, path: <data_dir>/<split>-*}]``.
``dagster_ds``
    What made each pushed split: ``configs -> <config> -> splits -> <split> ->
    {fingerprint, parents, lineage: [{transform, fingerprint, parents, columns}],
    data_dir, num_shards}``, ``columns`` (where recorded) giving each output
    column of a step with the parent columns it came from (see `LineageStep`).
    A push compares its fingerprint with this record to skip an unchanged split;
    the local Hub's column-lineage page reads ``lineage``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import yaml

from dagster_ds.errors import HubFeaturesMismatchError, InvalidArgumentError
from dagster_ds.features import Features
from dagster_ds.fingerprint import LineageStep

CARD_FILE = "README.md"
LINEAGE_KEY = "dagster_ds"
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)
_LEGACY_SHARD = re.compile(
    r"^data/(?P<split>\w+(?:\.\w+)*)-\d{5}-of-\d{5}(?:-[0-9a-f]+)?\.parquet$"
)


@dataclass(frozen=True)
class SplitRecord:
    """One split as pushed: sizes for ``dataset_info`` and provenance for ``dagster_ds``."""

    name: str
    num_examples: int
    num_bytes: int
    uploaded_bytes: int
    fingerprint: str
    lineage: tuple[LineageStep, ...] = ()
    num_shards: int = 1

    @property
    def parents(self) -> list[str]:
        """The fingerprints the final dataset was made from."""
        return list(self.lineage[-1].parents) if self.lineage else []


@dataclass
class Card:
    """A dataset card: its YAML header as a mapping, and the Markdown body after it."""

    data: dict[str, Any] = field(default_factory=lambda: {})
    body: str = ""

    @classmethod
    def parse(cls, text: str | None) -> Card:
        """The card of ``text`` (README.md's content); None or no header gives an empty one."""
        if not text:
            return cls()
        match = _FRONT_MATTER.match(text)
        if match is None:
            return cls({}, text)
        loaded = yaml.safe_load(match.group(1)) or {}
        if not isinstance(loaded, dict):
            raise InvalidArgumentError(
                f"The dataset card's YAML header is not a mapping: {match.group(1)[:200]!r}. "
                "Fix README.md on the Hub."
            )
        return cls(cast(dict[str, Any], loaded), text[match.end() :])

    def render(self) -> str:
        """README.md's new content."""
        header = yaml.safe_dump(self.data, sort_keys=False, allow_unicode=True, width=1000)
        return f"---\n{header}---\n{self.body}"

    # -- reading ------------------------------------------------------------

    def infos(self) -> dict[str, dict[str, Any]]:
        """``dataset_info`` per config name."""
        raw = self.data.get("dataset_info")
        if isinstance(raw, dict):
            info = cast(dict[str, Any], raw)
            return {str(info.get("config_name", "default")): copy.deepcopy(info)}
        if isinstance(raw, list):
            items = cast(list[Any], raw)
            return {
                str(item.get("config_name", "default")): copy.deepcopy(item)
                for item in items
                if isinstance(item, dict)
            }
        return {}

    def configs(self) -> dict[str, dict[str, Any]]:
        """``configs`` entries per config name."""
        raw = self.data.get("configs")
        if not isinstance(raw, list):
            return {}
        return {
            str(item.get("config_name", "default")): copy.deepcopy(item)
            for item in cast(list[Any], raw)
            if isinstance(item, dict)
        }

    def default_config(self) -> str | None:
        """The config ``load_dataset`` reads when given no name, as the anchor chooses it."""
        configs = self.configs()
        explicit = [name for name, entry in configs.items() if entry.get("default")]
        if explicit:
            return explicit[0]
        if "default" in configs:
            return "default"
        return next(iter(configs)) if len(configs) == 1 else None

    def data_files(self, config_name: str) -> dict[str, list[str]]:
        """The config's data files: split name to path patterns."""
        entry = self.configs().get(config_name)
        if entry is None:
            return {}
        return normalize_data_files(entry.get("data_files"))

    def features(self, config_name: str) -> Features | None:
        """The config's features from ``dataset_info``, if recorded."""
        info = self.infos().get(config_name)
        raw = info.get("features") if info else None
        return Features.from_yaml_list(raw) if isinstance(raw, list) else None

    def pushed(self, config_name: str) -> dict[str, dict[str, Any]]:
        """The ``dagster_ds`` records of a config's splits."""
        record = self.data.get(LINEAGE_KEY)
        if not isinstance(record, dict):
            return {}
        configs = cast(dict[str, Any], record).get("configs")
        config = configs.get(config_name) if isinstance(configs, dict) else None
        splits = config.get("splits") if isinstance(config, dict) else None
        return copy.deepcopy(cast(dict[str, dict[str, Any]], splits or {}))

    def lineages(self) -> dict[tuple[str, str], tuple[LineageStep, ...]]:
        """The recorded lineage of each pushed split, by (config, split); malformed ones skipped.

        Example:
            >>> step = {"transform": "map", "fingerprint": "b" * 32, "parents": ["a" * 32]}
            >>> splits = {"train": {"lineage": [step]}}
            >>> card = Card({"dagster_ds": {"configs": {"default": {"splits": splits}}}})
            >>> [steps[0].transform for steps in card.lineages().values()]
            ['map']
        """
        record = self.data.get(LINEAGE_KEY)
        configs = cast(dict[str, Any], record).get("configs") if isinstance(record, dict) else None
        found: dict[tuple[str, str], tuple[LineageStep, ...]] = {}
        for config in cast(dict[str, Any], configs) if isinstance(configs, dict) else {}:
            for split, entry in self.pushed(str(config)).items():
                steps = entry.get("lineage") if isinstance(entry, dict) else None
                try:
                    found[str(config), str(split)] = tuple(
                        LineageStep.from_dict(step) for step in cast(list[Any], steps or [])
                    )
                except (KeyError, TypeError, ValueError, AttributeError, IndexError):
                    continue
        return found

    # -- updating -----------------------------------------------------------

    def updated(
        self,
        *,
        config_name: str,
        data_dir: str,
        features: Features,
        splits: Sequence[SplitRecord],
        deleted_bytes: int,
        replace_splits: bool,
        set_default: bool | None,
        repo_files: Iterable[str] = (),
    ) -> Card:
        """A copy with ``splits`` of ``config_name`` recorded (the others kept).

        With ``replace_splits`` (a `DatasetDict` push) the config's splits become
        exactly ``splits``; otherwise the other splits stay, and must have the same
        features.

        Raises:
            HubFeaturesMismatchError: another split of the config has other features.
        """
        card = Card(copy.deepcopy(self.data), self.body)
        configs = card.configs()
        if not configs:
            configs = _legacy_configs(repo_files)
        card._update_info(config_name, features, splits, deleted_bytes, replace_splits)
        card._update_configs(configs, config_name, data_dir, splits, replace_splits, set_default)
        card._update_lineage(config_name, data_dir, splits, replace_splits)
        return card

    def _update_info(
        self,
        config_name: str,
        features: Features,
        splits: Sequence[SplitRecord],
        deleted_bytes: int,
        replace_splits: bool,
    ) -> None:
        infos = self.infos()
        current = infos.get(config_name)
        kept: list[dict[str, Any]] = []
        download = 0
        if current is not None and not replace_splits:
            new_names = {split.name for split in splits}
            kept = [
                dict(s)
                for s in current.get("splits") or []
                if isinstance(s, dict) and s.get("name") not in new_names
            ]
            recorded = current.get("features")
            if kept and isinstance(recorded, list):
                theirs = Features.from_yaml_list(cast(list[dict[str, Any]], recorded))
                if theirs != features:
                    raise HubFeaturesMismatchError(
                        f"The features of the pushed split(s) {sorted(new_names)} of config "
                        f"{config_name!r} differ from those of its other splits "
                        f"{[s.get('name') for s in kept]} on the Hub: {dict(features)} != "
                        f"{dict(theirs)}. Cast the dataset to the same features, or push to "
                        "another config_name."
                    )
            download = max(int(current.get("download_size") or 0) - deleted_bytes, 0)
        entries = kept + [
            {"name": s.name, "num_bytes": s.num_bytes, "num_examples": s.num_examples}
            for s in splits
        ]
        info: dict[str, Any] = {
            "features": features.to_yaml_list(),
            "splits": entries,
            "download_size": download + sum(s.uploaded_bytes for s in splits),
            "dataset_size": sum(int(entry.get("num_bytes") or 0) for entry in entries),
        }
        infos[config_name] = info
        if len(infos) == 1:
            ((name, only),) = infos.items()
            only.pop("config_name", None)
            self.data["dataset_info"] = only if name == "default" else {"config_name": name, **only}
        else:
            self.data["dataset_info"] = [
                {"config_name": name, **{k: v for k, v in item.items() if k != "config_name"}}
                for name, item in sorted(infos.items())
            ]

    def _update_configs(
        self,
        configs: dict[str, dict[str, Any]],
        config_name: str,
        data_dir: str,
        splits: Sequence[SplitRecord],
        replace_splits: bool,
        set_default: bool | None,
    ) -> None:
        entry = configs.get(config_name, {})
        files = {} if replace_splits else normalize_data_files(entry.get("data_files"))
        for split in splits:
            files[split.name] = [f"{data_dir}/{split.name}-*"]
        entry = {k: v for k, v in entry.items() if k not in ("config_name", "data_files")}
        entry = {
            "config_name": config_name,
            "data_files": [
                {"split": name, "path": paths[0] if len(paths) == 1 else paths}
                for name, paths in files.items()
            ],
            **entry,
        }
        if set_default and config_name != "default":
            if "default" in configs:
                raise InvalidArgumentError(
                    "set_default=True: the repository already has a config named 'default', "
                    "which stays the default; rename it first, or push to it."
                )
            for other in configs.values():
                other.pop("default", None)
            entry["default"] = True
        configs[config_name] = entry
        self.data["configs"] = [
            {"config_name": name, **{k: v for k, v in item.items() if k != "config_name"}}
            for name, item in sorted(configs.items())
        ]

    def _update_lineage(
        self,
        config_name: str,
        data_dir: str,
        splits: Sequence[SplitRecord],
        replace_splits: bool,
    ) -> None:
        record = self.data.get(LINEAGE_KEY)
        record = cast(dict[str, Any], record) if isinstance(record, dict) else {}
        configs = record.get("configs")
        configs = cast(dict[str, Any], configs) if isinstance(configs, dict) else {}
        pushed = {} if replace_splits else self.pushed(config_name)
        for split in splits:
            pushed[split.name] = {
                "fingerprint": split.fingerprint,
                "parents": split.parents,
                "lineage": [step.to_dict() for step in split.lineage],
                "data_dir": data_dir,
                "num_shards": split.num_shards,
            }
        configs[config_name] = {"splits": pushed}
        self.data[LINEAGE_KEY] = {"configs": dict(sorted(configs.items()))}


def normalize_data_files(raw: Any) -> dict[str, list[str]]:
    """A ``data_files`` value of a ``configs`` entry as split name to path patterns."""
    if raw is None:
        return {}
    if isinstance(raw, str):
        return {"train": [raw]}
    if isinstance(raw, dict):
        mapping = cast(dict[str, Any], raw)
        return {
            str(k): [v] if isinstance(v, str) else [str(p) for p in v] for k, v in mapping.items()
        }
    out: dict[str, list[str]] = {}
    for item in cast(list[Any], raw):
        if isinstance(item, str):
            out.setdefault("train", []).append(item)
        elif isinstance(item, dict):
            entry = cast(dict[str, Any], item)
            path = entry.get("path", [])
            paths = [path] if isinstance(path, str) else [str(p) for p in path]
            out.setdefault(str(entry.get("split", "train")), []).extend(paths)
    return out


def _legacy_configs(repo_files: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The default config of a repo pushed before cards had ``configs`` (``data/<split>-*``)."""
    splits: dict[str, None] = {}
    for path in repo_files:
        match = _LEGACY_SHARD.match(path)
        if match:
            splits[match.group("split")] = None
    if not splits:
        return {}
    files = [{"split": split, "path": f"data/{split}-*"} for split in splits]
    return {"default": {"config_name": "default", "data_files": files}}


def records_match(
    recorded: Mapping[str, Any] | None, fingerprint: str, data_dir: str, num_shards: int | None
) -> bool:
    """Whether a split's ``dagster_ds`` record says the same data sits in the same place."""
    if not recorded:
        return False
    if recorded.get("fingerprint") != fingerprint or recorded.get("data_dir") != data_dir:
        return False
    return num_shards is None or recorded.get("num_shards") == num_shards

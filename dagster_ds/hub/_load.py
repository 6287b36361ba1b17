"""Reading a Hub dataset repository: its revision, its card's configs, its data files.

`resolve_hub_dataset` turns ``("user/name", config, revision)`` into ``hf://``
URL patterns pinned to the resolved commit (``hf://datasets/user/name@<sha>/...``),
the features the card records for the config, and fsspec options for
``HfFileSystem``; `dagster_ds.load_dataset` reads them like any other files. The
commit id is part of the loaded dataset's fingerprint: a new commit gives a new
fingerprint, the same commit a cache hit, in any process.

Which files make which split, as the anchor decides it: ``data_files=`` (paths in
the repository) if given; else the card's ``configs`` entry for the config (the
``default`` one when no name is given); else the anchor's old push layout
(``data/<split>-XXXXX-of-YYYYY*.parquet``); else every data file as ``train``.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dagster_ds.errors import InvalidArgumentError, UnknownFormatError
from dagster_ds.features import Features
from dagster_ds.formats import FORMATS, infer_format
from dagster_ds.hub._card import CARD_FILE, Card, normalize_data_files
from dagster_ds.hub._client import HubClient, check_repo_id

_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
_LEGACY_SHARD = re.compile(r"^data/(?P<split>\w+(?:\.\w+)*)-\d{5}-of-\d{5}(?:-[0-9a-f]+)?\.\w+$")
_IGNORED = {CARD_FILE, ".gitattributes", "dataset_infos.json"}


def looks_like_hub_id(path: str) -> bool:
    """Whether ``load_dataset(path)`` names a Hub repository rather than local files.

    That is ``namespace/name`` (no protocol), where neither the path nor its first
    folder exists here and the name has no data file extension (``data/x.jsonl``
    is a missing local file, not a repository).
    """
    if not _HUB_ID.match(path) or path.split("/")[0] in FORMATS:
        return False
    if os.path.exists(path) or os.path.isdir(path.split("/")[0]):
        return False
    try:
        infer_format(path)
    except UnknownFormatError:
        return True
    return False


@dataclass(frozen=True)
class HubDataset:
    """A Hub dataset config resolved at one commit.

    Attributes:
        repo_id: The repository.
        commit: The commit read (40 hexadecimal characters).
        config_name: The config read, or None when the files came from elsewhere.
        data_files: Split name to ``hf://`` URL patterns pinned to ``commit``.
        features: The features the card records for the config, if any.
        storage_options: fsspec options for ``HfFileSystem`` (endpoint, token).
    """

    repo_id: str
    commit: str
    config_name: str | None
    data_files: dict[str, list[str]]
    features: Features | None
    storage_options: dict[str, Any]

    @property
    def origin(self) -> dict[str, Any]:
        """What identifies the source in a fingerprint (no endpoint, no token)."""
        return {"hub": self.repo_id, "commit": self.commit, "config": self.config_name}


def resolve_hub_dataset(
    repo_id: str,
    name: str | None,
    data_dir: str | None,
    data_files: Any,
    *,
    revision: str | None,
    token: str | None,
    endpoint: str | None,
) -> HubDataset:
    """Resolve ``repo_id`` at ``revision`` to data file patterns (see the module doc).

    Raises:
        InvalidRepoIdError: ``repo_id`` is malformed.
        RepoNotFoundError: the repository does not exist or the token cannot see it.
        RevisionNotFoundError: ``revision`` does not exist.
        HubAuthError: the token is refused.
        InvalidArgumentError: ``name`` is not one of the card's configs.
    """
    check_repo_id(repo_id)
    client = HubClient(endpoint, token)
    with client.errors("load_dataset", repo_id, revision, access="read"):
        info = client.api.dataset_info(repo_id, revision=revision)
        commit = info.sha or ""
        files = [sibling.rfilename for sibling in info.siblings or []]
        card = Card.parse(
            client.read_text(repo_id, commit, CARD_FILE) if CARD_FILE in files else None
        )
    config, patterns = _patterns(card, files, name, data_dir, data_files, repo_id)
    base = f"hf://datasets/{repo_id}@{commit}"
    urls = {
        split: [f"{base}/{pattern.lstrip('/')}" for pattern in split_patterns]
        for split, split_patterns in patterns.items()
    }
    features = card.features(config) if config is not None else None
    return HubDataset(repo_id, commit, config, urls, features, client.storage_options())


def _patterns(
    card: Card,
    files: Sequence[str],
    name: str | None,
    data_dir: str | None,
    data_files: Any,
    repo_id: str,
) -> tuple[str | None, dict[str, list[str]]]:
    if data_files is not None:
        prefix = f"{data_dir.strip('/')}/" if data_dir else ""
        return None, {
            split: [prefix + path for path in paths]
            for split, paths in normalize_data_files(data_files).items()
        }
    configs = card.configs()
    if configs and data_dir is None:
        config = name if name is not None else card.default_config()
        if config is None or config not in configs:
            raise InvalidArgumentError(
                f"load_dataset({repo_id!r}): "
                + (f"no config named {name!r}" if name is not None else "no default config")
                + f"; the card lists {sorted(configs)}. Pass name= one of them."
            )
        return config, card.data_files(config)
    if name is not None and configs:
        raise InvalidArgumentError(
            f"load_dataset({repo_id!r}, name={name!r}): give a config name or data_dir=, not both."
        )
    return None, _layout_patterns(files, data_dir, repo_id)


def _layout_patterns(
    files: Sequence[str], data_dir: str | None, repo_id: str
) -> dict[str, list[str]]:
    folder = data_dir.strip("/") if data_dir else None
    candidates = [
        path
        for path in files
        if path not in _IGNORED
        and not any(part.startswith((".", "_")) for part in path.split("/"))
        and (folder is None or path.startswith(f"{folder}/"))
    ]
    splits: dict[str, list[str]] = {}
    for path in candidates:
        relative = f"data/{posixpath.relpath(path, folder)}" if folder else path
        match = _LEGACY_SHARD.match(relative)
        if match:
            splits.setdefault(match.group("split"), []).append(path)
    if splits:
        return splits
    if not candidates:
        where = f"in {data_dir!r} " if data_dir else ""
        raise InvalidArgumentError(
            f"load_dataset({repo_id!r}): the repository has no data file {where}and its card "
            f"no configs (files: {sorted(files)[:10]}). Pass data_files= (paths in the repo)."
        )
    return {"train": sorted(candidates)}

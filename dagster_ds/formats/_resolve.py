"""Data files resolution: paths, globs, directories and split dicts to concrete files."""

from __future__ import annotations

import functools
import os
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from stat import S_ISDIR
from typing import Any, TypeAlias, cast

from fsspec import AbstractFileSystem
from fsspec.implementations.local import LocalFileSystem

from dagster_ds.errors import DataFilesNotFoundError, InvalidDataFilesError
from dagster_ds.formats._archives import expand_archives
from dagster_ds.formats._file import ResolvedFile
from dagster_ds.formats._io import is_local, url_to_fs
from dagster_ds.formats._local_files import local_find, local_glob
from dagster_ds.formats._stat_records import stat_key

PathLike: TypeAlias = str | os.PathLike[str]
DataFiles: TypeAlias = (
    PathLike
    | Sequence[PathLike]
    | Mapping[str, PathLike | Sequence[PathLike]]
    | Sequence[Mapping[str, Any]]
)

DEFAULT_SPLIT = "train"
# Metadata files that sit next to data files in dataset repositories (as the anchor).
_FILES_TO_IGNORE = frozenset(
    {
        "README.md",
        "config.json",
        "dataset_info.json",
        "dataset_infos.json",
        "dummy_data.zip",
        "dataset_dict.json",
    }
)
# Keys under which fsspec implementations report a content checksum or ETag.
_CHECKSUM_KEYS = ("ETag", "etag", "e_tag", "md5Hash", "crc32c", "checksum", "sha256", "blob_id")
_MAGIC = frozenset("*?[")


def resolve_data_files(
    data_files: DataFiles,
    *,
    base_path: PathLike | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> dict[str, list[ResolvedFile]]:
    """Resolve ``data_files`` as ``datasets.load_dataset`` does, to concrete files per split.

    ``data_files`` is a path, a glob pattern, a list of them (split ``"train"``), a dict
    ``{split: path_or_list}``, or a list of ``{"split": ..., "path": ...}`` dicts. Each
    may be any fsspec URL. A directory stands for every file under it, recursively.
    A path that exists as written is taken as written, even when it holds glob
    characters (a folder named ``run[1]``); otherwise ``*``, ``?`` and ``[...]`` match.
    Files (or folders on the way) whose names start with ``.`` or ``_`` are ignored
    unless the pattern names them explicitly (``".cache/*"``, ``"_tmp/*.csv"``), and so
    are dataset metadata files such as ``README.md``. Within a split, each pattern's
    matches are sorted and the patterns keep their order; a file listed twice is kept once.
    A ``.zip`` or ``.tar`` archive (``.tar.gz``...) stands for the data files inside it,
    read in place (``zip://member::archive`` URLs).

    Args:
        data_files: The paths, patterns, or splits of them.
        base_path: Folder or URL that relative paths are resolved against (default:
            the working directory).
        storage_options: Passed to the fsspec filesystem (credentials, endpoints).

    Returns:
        ``{split: [ResolvedFile, ...]}`` in a deterministic order.

    Raises:
        DataFilesNotFoundError: A path or pattern matches no file; the message names
            the pattern and the folder searched.
        InvalidDataFilesError: ``data_files`` has an unsupported shape.

    Example:
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> os.makedirs(folder + "/test")
        >>> for name in ["train-0.jsonl", "train-1.jsonl", "test/part-0.jsonl", "test/README.md"]:
        ...     open(folder + "/" + name, "w").close()
        >>> files = resolve_data_files({"train": "train-*.jsonl", "test": "test"}, base_path=folder)
        >>> [os.path.relpath(f.url, folder) for f in files["train"] + files["test"]]
        ['train-0.jsonl', 'train-1.jsonl', 'test/part-0.jsonl']
    """
    base = os.fspath(base_path) if base_path is not None else os.getcwd()
    options = dict(storage_options or {})
    resolved: dict[str, list[ResolvedFile]] = {}
    for split, patterns in _sanitize(data_files).items():
        seen: set[str] = set()
        files = resolved.setdefault(split, [])
        for pattern in patterns:
            matched = _resolve_pattern(_join(base, pattern), options)
            for file in expand_archives(matched, options):
                if file.url not in seen:
                    seen.add(file.url)
                    files.append(file)
    return resolved


def _sanitize(data_files: Any) -> dict[str, list[str]]:
    """``{split: [pattern, ...]}`` from every shape ``data_files`` may take."""
    if isinstance(data_files, (str, os.PathLike)):
        return {DEFAULT_SPLIT: [os.fspath(data_files)]}
    if isinstance(data_files, Mapping):
        return {str(split): _patterns(value, split) for split, value in data_files.items()}
    if isinstance(data_files, Iterable):
        items = list(data_files)
        if items and all(isinstance(item, Mapping) for item in items):
            splits = [str(item.get("split")) for item in items]
            if len(set(splits)) != len(splits) or not all(
                set(item) == {"split", "path"} for item in items
            ):
                raise InvalidDataFilesError(
                    f"data_files entries must be distinct {{'split': ..., 'path': ...}} dicts, "
                    f"got {items!r}."
                )
            return {str(item["split"]): _patterns(item["path"], item["split"]) for item in items}
        return {DEFAULT_SPLIT: _patterns(items, DEFAULT_SPLIT)}
    raise InvalidDataFilesError(
        f"data_files must be a path, a list of paths or a dict of splits to paths, "
        f"got {type(data_files).__name__}: {data_files!r}."
    )


def _patterns(value: Any, split: object) -> list[str]:
    values = [value] if isinstance(value, (str, os.PathLike)) else value
    if not isinstance(values, Iterable) or not all(
        isinstance(v, (str, os.PathLike)) for v in values
    ):
        raise InvalidDataFilesError(
            f"data_files for split {split!r} must be a path or a list of paths, got {value!r}."
        )
    patterns = [os.fspath(v) for v in values]
    if not patterns:
        raise InvalidDataFilesError(f"data_files for split {split!r} is an empty list.")
    return patterns


def _join(base: str, pattern: str) -> str:
    if "://" in pattern or "::" in pattern or os.path.isabs(pattern):
        return pattern
    if "://" in base:
        return posixpath.join(base.rstrip("/"), pattern)
    return os.path.join(os.path.abspath(base), pattern)


def _has_magic(path: str) -> bool:
    return any(char in _MAGIC for char in path)


def _glob_root(path: str) -> str:
    """The folder a glob pattern searches: its leading parts without wildcards."""
    parts = path.split("/")
    for i, part in enumerate(parts):
        if _has_magic(part):
            return "/".join(parts[:i]) or "/"
    return posixpath.dirname(path)


def _private_parts(parts: Iterable[str]) -> int:
    return sum(1 for part in parts if part[:1] in "._" and part not in (".", ".."))


def _is_requested(path: str, pattern: str) -> bool:
    """False for a match inside hidden or ``_``-prefixed names the pattern did not name."""
    name = path[path.rfind("/") + 1 :]
    if name in _FILES_TO_IGNORE:
        return posixpath.basename(pattern) == name
    return _private_parts(path.split("/")) <= _named_private_parts(pattern)


@functools.lru_cache(maxsize=64)
def _named_private_parts(pattern: str) -> int:
    """How many hidden or ``_``-prefixed parts ``pattern`` names (asked once per match)."""
    return _private_parts(pattern.split("/"))


def _is_listed(path: str, folder: str) -> bool:
    """Whether a file found under a folder is a data file (not hidden, not metadata)."""
    relative = posixpath.relpath(path, folder).split("/")
    return relative[-1] not in _FILES_TO_IGNORE and _private_parts(relative) == 0


def _resolve_pattern(pattern: str, storage_options: dict[str, Any]) -> list[ResolvedFile]:
    """The files ``pattern`` names: an existing path as written, else its glob matches.

    A path that holds ``*``, ``?`` or ``[`` is first looked up as written, so a file or
    folder named ``run[1]`` is found as itself (one lookup more per pattern); only when
    nothing has that name is the path a glob pattern.
    """
    fs, path = url_to_fs(pattern, storage_options)
    if is_local(fs):
        return _resolve_local(fs, pattern, path)
    info = _existing(fs, path)
    if info is None and _has_magic(path):
        searched = _glob_root(path)
        found = cast(dict[str, dict[str, Any]], fs.glob(path, detail=True))
        entries = [
            (name, info)
            for name, info in found.items()
            if info.get("type") == "file" and _is_requested(name, path)
        ]
    elif info is None:
        raise _not_found(fs, pattern, posixpath.dirname(path), missing=True)
    elif info.get("type") == "directory":
        searched = path
        found = cast(dict[str, dict[str, Any]], fs.find(path, detail=True))
        entries = [(name, info) for name, info in found.items() if _is_listed(name, path)]
    else:
        searched = path
        entries = [(path, info)]
    if not entries:
        raise _not_found(fs, pattern, searched, missing=False)
    return [_resolved(fs, name, info) for name, info in sorted(entries, key=lambda e: e[0])]


def _resolve_local(fs: AbstractFileSystem, pattern: str, path: str) -> list[ResolvedFile]:
    """`_resolve_pattern` on local disk: the same files, each stat'ed once, its stat kept.

    The stat goes with each file (`ResolvedFile.stat`), so that fingerprinting the
    files right after stats none of them again.
    """
    try:
        stat = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        stat = None
    if stat is None and _has_magic(path):
        searched = _glob_root(path)
        found = [(name, st) for name, st in local_glob(path) if _is_requested(name, path)]
    elif stat is None:
        raise _not_found(fs, pattern, posixpath.dirname(path), missing=True)
    elif S_ISDIR(stat.st_mode):
        searched = path
        found = [(name, st) for name, st in local_find(path) if _is_listed(name, path)]
    else:
        searched = path
        found = [(path, stat)]
    if not found:
        raise _not_found(fs, pattern, searched, missing=False)
    return [
        ResolvedFile(
            url=name,
            size=st.st_size if st is not None else 0,
            stat=stat_key(name, st) if st is not None else None,
        )
        for name, st in found
    ]


def _existing(fs: AbstractFileSystem, path: str) -> dict[str, Any] | None:
    """What ``fs`` says of ``path`` taken literally, or None when nothing has that name."""
    try:
        return cast(dict[str, Any], fs.info(path))
    except (FileNotFoundError, NotADirectoryError):
        return None


def _resolved(fs: AbstractFileSystem, path: str, info: Mapping[str, Any]) -> ResolvedFile:
    local = isinstance(fs, LocalFileSystem)
    url = path if local else fs.unstrip_protocol(path)
    return ResolvedFile(
        url=url, size=int(info.get("size") or 0), checksum=storage_checksum(info, local)
    )


def storage_checksum(info: Mapping[str, Any], local: bool) -> str | None:
    if local:
        return None
    for key in _CHECKSUM_KEYS:
        value = info.get(key)
        if value:
            return f"{key}:{str(value).strip(chr(34))}"
    lfs = info.get("lfs")
    if isinstance(lfs, Mapping) and lfs.get("sha256"):
        return f"lfs.sha256:{lfs['sha256']}"
    return None


def _not_found(
    fs: AbstractFileSystem, pattern: str, searched: str, *, missing: bool
) -> DataFilesNotFoundError:
    shown = searched if isinstance(fs, LocalFileSystem) else fs.unstrip_protocol(searched)
    try:
        listing = cast(list[str], fs.ls(searched, detail=False))
        names = sorted(posixpath.basename(p.rstrip("/")) for p in listing)
    except (FileNotFoundError, NotADirectoryError):
        names = None
    if names is None:
        where = f"the folder {shown!r} does not exist"
    elif not names:
        where = f"the folder {shown!r} is empty"
    else:
        more = f", ... ({len(names)} entries)" if len(names) > 8 else ""
        where = f"the folder {shown!r} holds: {', '.join(names[:8])}{more}"
    what = "No file or folder" if missing else "No data file"
    message = (
        f"{what} matches {pattern!r}: {where}. Names starting with '.' or '_' are ignored "
        "unless the pattern names them. Fix the path, the pattern ('*' stays in one folder, "
        "'**' also searches subfolders) or base_path."
    )
    if "[" in pattern or "]" in pattern:
        message += (
            " In a pattern, '[...]' matches one character of a set: to match a name that "
            f"holds brackets, escape them as '[[]' and '[]]' (glob.escape does it: "
            f"{_escaped_folders(pattern)!r})."
        )
    return DataFilesNotFoundError(message, pattern=pattern, searched=shown)


def _escaped_folders(pattern: str) -> str:
    """``pattern`` with brackets escaped in its folders (its last part is kept as written)."""
    import glob

    folder, _, name = pattern.rpartition("/")
    return f"{glob.escape(folder)}/{name}" if folder else glob.escape(name)

"""Where a pushed split's Parquet files go: names that say what they hold, sorted in row order.

Each file's name ends with a key naming its content (16 hexadecimal digits:
see `file_key`), so a file already on the Hub under its name is neither written
nor uploaded again. `datasets.load_dataset` reads the pattern ``<dir>/<split>-*``
of the card's ``configs`` as the matching files sorted by name, so names sort in
row order. Two layouts:

- following the dataset's shards (a map-style dataset pushed without
  ``num_shards`` or ``max_shard_size``): ``<split>-<rank>-<key>.parquet``,
  ``rank`` 10 hexadecimal digits. Ranks are `RANK_GAP` apart; a file kept from
  the previous version keeps its rank and a new one takes a rank between its
  neighbours', so appending, changing or removing a shard renames nothing.
  A stream pushed without ``num_shards`` or ``max_shard_size`` has these
  names too, one file per stream shard: its key is the `content_key` of the
  file written, since nothing names a stream shard's rows before they are read.
- the user's cut (``num_shards``, ``max_shard_size``, a shuffled or sorted
  dataset): ``<split>-<i:05d>-of-<n:05d>-<key>.parquet``, the anchor's names
  with the key added.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import xxhash

RANK_DIGITS = 10
RANK_GAP = 1 << 16
_RANK_LIMIT = 16**RANK_DIGITS
#: Changes whenever the bytes written for the same rows change (writer options).
FILE_FORMAT = "dagster_ds-parquet-2"
_BLOCK_BYTES = 1 << 20


def file_key(*parts: str | bytes) -> str:
    """16 hexadecimal digits naming a file's content by what determines it.

    Example:
        >>> len(file_key("fingerprint", "0/1"))
        16
    """
    digest = xxhash.xxh3_64(FILE_FORMAT.encode())
    for part in parts:
        digest.update(b"\0" + (part.encode() if isinstance(part, str) else part))
    return digest.hexdigest()


def content_key(path: str) -> str:
    """16 hexadecimal digits naming a written file by its bytes (read in blocks).

    Example:
        >>> import tempfile
        >>> with tempfile.NamedTemporaryFile() as f:
        ...     len(content_key(f.name))
        16
    """
    digest = xxhash.xxh3_64(FILE_FORMAT.encode() + b"\0content\0")
    with open(path, "rb") as file:
        while block := file.read(_BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def ranked_keys(existing: Iterable[str], directory: str, split: str) -> frozenset[str]:
    """The keys of the split's files already in ``existing`` under ranked names.

    Example:
        >>> sorted(ranked_keys(["data/train-0000010000-" + "a" * 16 + ".parquet"], "data", "train"))
        ['aaaaaaaaaaaaaaaa']
    """
    return frozenset(key for _, key in _ranked_files(existing, directory, split))


@dataclass(frozen=True)
class Placement:
    """The repository path of each output file, and those already there (by index)."""

    paths: tuple[str, ...]
    kept: frozenset[int]


def place(
    existing: Iterable[str], directory: str, split: str, keys: Sequence[str], *, ranked: bool
) -> Placement:
    """Name the output files of ``keys`` (in row order), keeping those already in ``existing``.

    Example:
        >>> first = place([], "data", "train", ["a" * 16, "b" * 16], ranked=True)
        >>> [path.split("-")[1] for path in first.paths]
        ['0000010000', '0000020000']
        >>> place(first.paths, "data", "train", ["a" * 16, "b" * 16, "c" * 16], ranked=True).kept
        frozenset({0, 1})
    """
    present = set(existing)
    if not ranked:
        n = len(keys)
        paths = tuple(
            f"{directory}/{split}-{i:05d}-of-{n:05d}-{key}.parquet" for i, key in enumerate(keys)
        )
        return Placement(paths, frozenset(i for i, path in enumerate(paths) if path in present))
    ranks = _ranks(_ranked_files(present, directory, split), keys)
    paths = tuple(
        f"{directory}/{split}-{rank:0{RANK_DIGITS}x}-{key}.parquet"
        for rank, key in zip(ranks, keys, strict=True)
    )
    return Placement(paths, frozenset(i for i, path in enumerate(paths) if path in present))


def _ranked_files(paths: Iterable[str], directory: str, split: str) -> list[tuple[int, str]]:
    """The (rank, key) of the split's files in the ranked layout, in rank order."""
    pattern = re.compile(
        rf"^{re.escape(directory)}/{re.escape(split)}-([0-9a-f]{{{RANK_DIGITS}}})-([0-9a-f]{{16}})"
        r"\.parquet$"
    )
    found = [match.groups() for match in map(pattern.match, paths) if match]
    return sorted((int(rank, 16), key) for rank, key in found)


def _ranks(old: Sequence[tuple[int, str]], keys: Sequence[str]) -> list[int]:
    """A rank per key, increasing; a key found in ``old`` in the same order keeps its rank."""
    slots: dict[str, list[int]] = {}
    for position, (_, key) in enumerate(old):
        slots.setdefault(key, []).append(position)
    ranks: list[int | None] = []
    last = -1
    for key in keys:  # greedy: each key takes its first old file after the last one taken
        later = [position for position in slots.get(key, []) if position > last]
        if later:
            last = later[0]
            ranks.append(old[last][0])
        else:
            ranks.append(None)
    filled = _fill(ranks)
    return filled if filled is not None else [RANK_GAP * (i + 1) for i in range(len(keys))]


def _fill(ranks: list[int | None]) -> list[int] | None:
    """``ranks`` with each run of None spaced between its neighbours; None if there is no room."""
    out: list[int] = []
    i = 0
    while i < len(ranks):
        rank = ranks[i]
        if rank is not None:
            out.append(rank)
            i += 1
            continue
        end = i
        while end < len(ranks) and ranks[end] is None:
            end += 1
        low = out[-1] if out else 0
        high = ranks[end] if end < len(ranks) else None
        count = end - i
        if high is None:
            new = [low + RANK_GAP * (j + 1) for j in range(count)]
            if new[-1] >= _RANK_LIMIT:
                return None
        else:
            if high - low - 1 < count:
                return None
            new = [low + (high - low) * (j + 1) // (count + 1) for j in range(count)]
        out.extend(new)
        i = end
    return out

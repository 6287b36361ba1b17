"""Groups of small data files, each read into one shard, cut where the files' content says.

A split of thousands of tiny files would otherwise be thousands of shards, and
every row-local transform thousands of cache entries, whose fixed cost then
outweighs the rows. Consecutive small files are read into one shard instead,
of about `DEFAULT_SHARD_BYTES` source bytes; a file of that size or more is a
shard of its own.

Where a group ends depends on each file alone (content-defined chunking over
the sequence of files, as rsync and restic cut a byte stream): a group ends
after file *i* when its fingerprint, read as a number *u* in [0, 1), is below
``size_i / shard_bytes``, so a group holds ``shard_bytes`` of source in
expectation, and file *i* ends its group with a probability proportional to
its size. A big file (``size >= shard_bytes``) ends its group and the one
before it. A cut after file *i* thus depends on files *i* and *i + 1* only,
never on a byte count since the last cut, so one edit (a file added, removed
or changed) changes at most 3 groups (the one it is in, and the neighbours it
may split from or merge with), and at most 2 when neither the old nor the
new file is big; the groups before and after are the same, and so are their
cached shards. Appending a file recomputes only the last group, and reads only
the new file (the group's others are the last group stored: `_files`).

A group's fingerprint is `shards_fingerprint` of its files' fingerprints (a
single file's group keeps the file's), and its hash tree names each file and
its fingerprint, so `dagster-ds cache explain` says which file changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from dagster_ds.arrow._results import Transform
from dagster_ds.arrow._shards import shards_fingerprint
from dagster_ds.cache import parse_size
from dagster_ds.errors import InvalidArgumentError
from dagster_ds.fingerprint import HashNode, generate_random_fingerprint

#: Source bytes a shard of small files holds, in expectation (``shard_bytes``'s default).
#: A cache entry's fixed cost (lookup, lock, manifest, publish: about a millisecond or
#: two locally) is a few percent of reading and mapping 1 MiB of rows; measured on 5,000
#: tiny JSON Lines files, a first run of load + map + filter costs the same CPU at 1, 4
#: and 16 MiB, while appending a file, which recomputes about one group, costs 0.5 s,
#: 0.6 s and 2.1 s. Files of 1 MiB or more are shards of their own, as before.
DEFAULT_SHARD_BYTES = 1 << 20

_SCALE = float(1 << 64)


def shard_bytes_of(value: int | str | None) -> int:
    """``shard_bytes`` as given to `load_dataset`, in bytes (0: a shard per file).

    Raises:
        InvalidArgumentError: ``value`` is not a size.
    """
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str):
        try:
            return parse_size(value)
        except ValueError as error:
            raise InvalidArgumentError(_not_a_size(value)) from error
    raise InvalidArgumentError(_not_a_size(value))


def _not_a_size(value: object) -> str:
    return (
        f"shard_bytes={value!r} is not a size: pass bytes (an int >= 0) or a size such as "
        "'4MiB' or '500kB'; 0 or None reads each file into a shard of its own."
    )


def file_groups(fingerprints: Sequence[str], sizes: Sequence[int], shard_bytes: int) -> list[range]:
    """Consecutive runs of the files (given by fingerprint and size) read into one shard each.

    Args:
        fingerprints: Each file's fingerprint (32 hexadecimal characters), in order.
        sizes: Each file's size in bytes.
        shard_bytes: The source bytes a group holds in expectation; 0: a group per file.

    Returns:
        The files' positions, a range per group, covering them all in order.

    Example:
        >>> file_groups(["f" * 32, "0" * 32, "f" * 32], [10, 10, 100], 100)
        [range(0, 2), range(2, 3)]
    """
    if shard_bytes <= 0:
        return [range(index, index + 1) for index in range(len(fingerprints))]
    big = [size >= shard_bytes for size in sizes]
    groups: list[range] = []
    start = 0
    for index, fingerprint in enumerate(fingerprints):
        last = index + 1 == len(fingerprints)
        if last or big[index] or big[index + 1] or _ends(fingerprint, sizes[index], shard_bytes):
            groups.append(range(start, index + 1))
            start = index + 1
    return groups


def _ends(fingerprint: str, size: int, shard_bytes: int) -> bool:
    """Whether a small file ends its group: with probability ``size / shard_bytes``."""
    return int(fingerprint[:16], 16) / _SCALE < size / shard_bytes


def group_transform(transforms: Sequence[Transform], names: Sequence[str]) -> Transform:
    """The load of a group of files, each loaded by one of ``transforms`` (named ``names``).

    One file's group is that file's load. The tree names each file (by its
    name when first stored: a hit keeps the names it was stored with).
    """
    if len(transforms) == 1:
        return transforms[0]
    name = transforms[0].name
    if any(transform.tree is None for transform in transforms):
        return Transform(name, (), generate_random_fingerprint(), None)
    fingerprint = shards_fingerprint([transform.fingerprint for transform in transforms])
    components: dict[str, HashNode] = {}
    for transform, label in zip(transforms, names, strict=True):
        key, copy = f"file {label!r}", 1
        while key in components:  # the same file listed twice
            copy += 1
            key = f"file {label!r} ({copy})"
        components[key] = HashNode("fingerprint", key, transform.fingerprint)
    return Transform(name, (), fingerprint, HashNode("files", name, fingerprint, components))

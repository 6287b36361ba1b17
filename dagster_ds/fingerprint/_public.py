"""The public Hasher and the explain entry point."""

from __future__ import annotations

import xxhash

from dagster_ds.fingerprint._hasher import describe_value, hash_value
from dagster_ds.fingerprint._tree import Explanation, HashNode, diff_trees


class Hasher:
    """xxh3-128 hashes of Python objects, stable across processes and machines.

    Functions from the user's own modules are hashed by value (code, the
    globals, helpers and closure cells they use); functions from installed
    packages by name and package version. Dict keys and set elements are
    order-independent; Arrow data is hashed from its buffers, however chunked.

    Example:
        >>> digest = Hasher.hash(lambda example: {"length": len(example["text"])})
        >>> len(digest)
        32
        >>> hasher = Hasher()
        >>> hasher.update("a")
        >>> hasher.update([1, 2])
        >>> len(hasher.hexdigest())
        32
    """

    def __init__(self) -> None:
        self._state = xxhash.xxh3_128()

    @classmethod
    def hash(cls, value: object) -> str:
        """The 32-hexadecimal-character hash of ``value``.

        Raises:
            UnhashableError: ``value`` holds something that cannot be pickled;
                the message names the path to it.
        """
        return hash_value(value)

    @classmethod
    def describe(cls, value: object) -> HashNode:
        """The hash tree of ``value``: its digest and the components it is made of."""
        return describe_value(value)

    def update(self, value: object) -> None:
        """Add ``value`` to the running hash."""
        self._state.update(hash_value(value).encode())

    def hexdigest(self) -> str:
        """The running hash of every value added so far."""
        return self._state.hexdigest()


def explain(old: object, new: object) -> Explanation:
    """Say which components differ between two hashes of the same kind of object.

    Each side is either an object (hashed now) or a `HashNode` recorded earlier,
    for example one read back with `HashNode.from_dict`. The differences are the
    deepest components that differ: a function's ``code``, a ``global 'name'``,
    a ``closure variable 'name'``, a ``default 'name'``, a transform's
    ``argument 'name'`` or ``parent fingerprint``.

    Example:
        >>> offset = 1
        >>> def add(x):
        ...     return x + offset
        >>> before = Hasher.describe(add)
        >>> offset = 2
        >>> [str(d) for d in explain(before, add).differences]
        ["global 'offset': changed"]
    """
    old_node = old if isinstance(old, HashNode) else describe_value(old)
    new_node = new if isinstance(new, HashNode) else describe_value(new)
    return diff_trees(old_node, new_node)

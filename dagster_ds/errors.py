"""Errors and warnings raised by dagster_ds.

Every exception raised on purpose by this package derives from `DagsterDsError`.
Where callers reasonably expect a builtin (``except TypeError``), the subclass
inherits that builtin too::

    DagsterDsError
    ├── UnhashableError (TypeError)              an object cannot be fingerprinted
    └── CacheError                               a cache operation failed
        ├── InvalidFingerprintError (ValueError) not 32 lowercase hex characters
        ├── CacheMetadataError (TypeError)       entry metadata is not JSON data
        ├── CacheWriterError (ValueError)        an entry writer was misused
        ├── CacheFileNotFoundError (KeyError)    an entry has no file of that name
        ├── CacheFormatError (ValueError)        an entry's manifest format is unsupported
        ├── CacheLockTimeoutError (TimeoutError) waited too long for a fingerprint's lock
        └── CacheEntryInUseError (RuntimeError)  an entry to remove is leased by a reader

    DagsterDsWarning (UserWarning)
    ├── UnhashableTransformWarning      a transform got a random fingerprint
    └── CacheCorruptionWarning          a corrupt cache entry was quarantined

Messages say what failed, show the offending value, and say how to fix it.
"""

from __future__ import annotations

__all__ = [
    "CacheCorruptionWarning",
    "CacheEntryInUseError",
    "CacheError",
    "CacheFileNotFoundError",
    "CacheFormatError",
    "CacheLockTimeoutError",
    "CacheMetadataError",
    "CacheWriterError",
    "DagsterDsError",
    "DagsterDsWarning",
    "InvalidFingerprintError",
    "UnhashableError",
    "UnhashableTransformWarning",
]


class DagsterDsError(Exception):
    """Base class of every error raised by dagster_ds."""


class UnhashableError(DagsterDsError, TypeError):
    """An object cannot be hashed, for example a closure holding a lock.

    Attributes:
        path: Where the offending object sits, outermost first, for example
            ``("argument 'function'", "<function f>", "closure variable 'lock'")``,
            which reads "closure variable 'lock' of <function f> of argument
            'function'".
        reason: Why it cannot be hashed, usually the pickling error's message.
    """

    def __init__(self, path: tuple[str, ...], reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(self.explanation)

    @property
    def explanation(self) -> str:
        """The path to the offending object and the reason, as one line."""
        where = " of ".join(reversed(self.path)) if self.path else "the object"
        return f"{where}: {self.reason}"


class DagsterDsWarning(UserWarning):
    """Base class of every warning emitted by dagster_ds."""


class UnhashableTransformWarning(DagsterDsWarning):
    """A transform could not be hashed, so its result gets a random fingerprint."""


class CacheCorruptionWarning(DagsterDsWarning):
    """A cache entry failed its size or checksum check; it was quarantined and is recomputed."""


class CacheError(DagsterDsError):
    """A cache operation failed."""


class InvalidFingerprintError(CacheError, ValueError):
    """A fingerprint is not 32 lowercase hexadecimal characters."""


class CacheMetadataError(CacheError, TypeError):
    """Metadata given for a cache entry is not JSON data (str keys, lists, numbers...)."""


class CacheWriterError(CacheError, ValueError):
    """An entry writer was misused: a bad file name, a file opened twice, use after close."""


class CacheFileNotFoundError(CacheError, KeyError):
    """A cache entry has no file of the requested name."""

    def __str__(self) -> str:
        # KeyError's str() is the repr of its argument; show the message as written.
        return str(self.args[0]) if self.args else ""


class CacheFormatError(CacheError, ValueError):
    """A cache entry was written in a manifest format this version cannot read."""


class CacheLockTimeoutError(CacheError, TimeoutError):
    """Waiting for another process building the same fingerprint took too long."""


class CacheEntryInUseError(CacheError, RuntimeError):
    """A cache entry cannot be removed because a live reader holds a lease on it."""

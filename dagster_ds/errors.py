"""Errors and warnings raised by dagster_ds.

Every exception raised on purpose by this package derives from `DagsterDsError`.
Where callers reasonably expect a builtin (``except TypeError``), the subclass
inherits that builtin too::

    DagsterDsError
    └── UnhashableError (TypeError)     an object cannot be fingerprinted

    DagsterDsWarning (UserWarning)
    └── UnhashableTransformWarning      a transform got a random fingerprint

Messages say what failed, show the offending value, and say how to fix it.
"""

from __future__ import annotations

__all__ = [
    "DagsterDsError",
    "DagsterDsWarning",
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

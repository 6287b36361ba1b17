"""Errors and warnings raised by dagster_ds.

Every exception raised on purpose by this package derives from `DagsterDsError`.
Where callers reasonably expect a builtin (``except TypeError``), the subclass
inherits that builtin too::

    DagsterDsError
    ├── UnhashableError (TypeError)                 an object cannot be fingerprinted
    └── LocalHubError                               the local Hub server failed or refused
        ├── LocalHubStartError (RuntimeError)       the server did not start listening
        ├── HubDataDirError (ValueError)            the data folder is not a local Hub store
        ├── HubUnauthorizedError (PermissionError)  a request had a missing or wrong token
        ├── HubBadRequestError (ValueError)         a request payload is malformed
        ├── HubConflictError (ValueError)           a repo, branch or tag already exists
        │   └── HubStaleParentError                 ``parent_commit`` is no longer the head
        └── HubNotFoundError (LookupError)          something a request names does not exist
            ├── HubRepositoryNotFoundError          no such repository
            ├── HubRevisionNotFoundError            no such branch, tag, PR ref or commit
            └── HubEntryNotFoundError               no such file or folder at that revision

    DagsterDsWarning (UserWarning)
    └── UnhashableTransformWarning      a transform got a random fingerprint

Messages say what failed, show the offending value, and say how to fix it.

The ``Hub*`` errors are raised by the local Hub server's storage
(`dagster_ds.testing`); the server turns each into the HTTP status and
``X-Error-Code`` the real Hub uses, so ``huggingface_hub`` raises its own
classes (``RepositoryNotFoundError``, ``RevisionNotFoundError``, ...).
"""

from __future__ import annotations

__all__ = [
    "DagsterDsError",
    "DagsterDsWarning",
    "HubBadRequestError",
    "HubConflictError",
    "HubDataDirError",
    "HubEntryNotFoundError",
    "HubNotFoundError",
    "HubRepositoryNotFoundError",
    "HubRevisionNotFoundError",
    "HubStaleParentError",
    "HubUnauthorizedError",
    "LocalHubError",
    "LocalHubStartError",
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


class LocalHubError(DagsterDsError):
    """The local Hub server (`dagster_ds.testing`) failed or refused a request."""


class LocalHubStartError(LocalHubError, RuntimeError):
    """The local Hub server did not start listening (port taken, startup timeout)."""


class HubDataDirError(LocalHubError, ValueError):
    """The data folder given to the local Hub server is not a local Hub store."""


class HubUnauthorizedError(LocalHubError, PermissionError):
    """A request to the local Hub server had a missing or wrong token."""


class HubBadRequestError(LocalHubError, ValueError):
    """A request to the local Hub server has a malformed payload or argument."""


class HubConflictError(LocalHubError, ValueError):
    """A repository, branch or tag that a request creates already exists."""


class HubStaleParentError(HubConflictError):
    """A commit's ``parent_commit`` is no longer the head of the branch it targets."""


class HubNotFoundError(LocalHubError, LookupError):
    """Something a request to the local Hub server names does not exist."""


class HubRepositoryNotFoundError(HubNotFoundError):
    """No repository with that type and id exists on the local Hub server."""


class HubRevisionNotFoundError(HubNotFoundError):
    """No branch, tag, pull-request ref or commit with that name exists in the repository."""


class HubEntryNotFoundError(HubNotFoundError):
    """No file or folder with that path exists at the requested revision."""


class DagsterDsWarning(UserWarning):
    """Base class of every warning emitted by dagster_ds."""


class UnhashableTransformWarning(DagsterDsWarning):
    """A transform could not be hashed, so its result gets a random fingerprint."""

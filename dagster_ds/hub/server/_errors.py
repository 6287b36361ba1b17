"""Errors of the local Hub server.

They belong to the one hierarchy rooted in `DagsterDsError`::

    DagsterDsError
    └── LocalHubError                               the local Hub server failed or refused
        ├── LocalHubStartError (RuntimeError)       the server did not start listening
        ├── HubDataDirError (ValueError)            the data folder is not a local Hub store
        ├── HubUnauthorizedError (PermissionError)  a request had a missing or wrong token
        ├── HubForbiddenError (PermissionError)     a request came from another site or host
        ├── HubBadRequestError (ValueError)         a request payload is malformed
        │   ├── HubPayloadTooLargeError             a body exceeds the route's size limit
        │   └── HubUnsupportedMediaTypeError        a body's content type is refused
        ├── HubTimeoutError (TimeoutError)          a request body did not arrive in time
        ├── HubTooManyRequestsError                 a cap on sessions in flight was reached
        ├── HubConflictError (ValueError)           a repo, branch or tag already exists
        │   └── HubStaleParentError                 ``parent_commit`` is no longer the head
        └── HubNotFoundError (LookupError)          something a request names does not exist
            ├── HubRepositoryNotFoundError          no such repository
            ├── HubRevisionNotFoundError            no such branch, tag, PR ref or commit
            └── HubEntryNotFoundError               no such file or folder at that revision

The server turns each into the HTTP status and ``X-Error-Code`` the real Hub
uses, so ``huggingface_hub`` raises its own classes (``RepositoryNotFoundError``,
``RevisionNotFoundError``, ...).
"""

from __future__ import annotations

from dagster_ds.errors import DagsterDsError

__all__ = [
    "HubBadRequestError",
    "HubConflictError",
    "HubDataDirError",
    "HubEntryNotFoundError",
    "HubForbiddenError",
    "HubNotFoundError",
    "HubPayloadTooLargeError",
    "HubRepositoryNotFoundError",
    "HubRevisionNotFoundError",
    "HubStaleParentError",
    "HubTimeoutError",
    "HubTooManyRequestsError",
    "HubUnauthorizedError",
    "HubUnsupportedMediaTypeError",
    "LocalHubError",
    "LocalHubStartError",
]


class LocalHubError(DagsterDsError):
    """The local Hub server (`dagster_ds.hub.server`) failed or refused a request."""


class LocalHubStartError(LocalHubError, RuntimeError):
    """The local Hub server did not start listening (port taken, startup timeout)."""


class HubDataDirError(LocalHubError, ValueError):
    """The data folder given to the local Hub server is not a local Hub store."""


class HubUnauthorizedError(LocalHubError, PermissionError):
    """A request to the local Hub server had a missing or wrong token."""


class HubForbiddenError(LocalHubError, PermissionError):
    """A request came from another web site (Origin) or named another host (Host)."""


class HubBadRequestError(LocalHubError, ValueError):
    """A request to the local Hub server has a malformed payload or argument."""


class HubPayloadTooLargeError(HubBadRequestError):
    """A request body is larger than the route accepts."""


class HubUnsupportedMediaTypeError(HubBadRequestError):
    """A request body has a content type the route does not accept."""


class HubTimeoutError(LocalHubError, TimeoutError):
    """A request body did not arrive within the server's body timeout."""


class HubTooManyRequestsError(LocalHubError):
    """A cap on work in flight (upload sessions per token) was reached."""


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

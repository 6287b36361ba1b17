"""A local server speaking the Hugging Face Hub HTTP API, for tests and offline pipelines.

``huggingface_hub`` (with Xet disabled) and ``datasets.load_dataset`` accept it as
their Hub: create model, dataset and space repos, push commits with LFS files,
open pull-request refs, list trees and download files, all on this machine. It
also answers the web pages a Hub URL opens (repo, commit, tree, file) with simple
HTML. Run it with ``dagster-ds hub serve``, `LocalHubServer`, or as an ASGI app
(`create_hub_app`). For pytest, add
``pytest_plugins = ["dagster_ds.testing.pytest_plugin"]`` to ``conftest.py`` and
use the ``local_hub`` fixture.

Example:
    >>> from huggingface_hub import HfApi
    >>> from dagster_ds.hub.server import LocalHubServer
    >>> with LocalHubServer() as hub:
    ...     api = HfApi(endpoint=hub.endpoint, token="anything")
    ...     _ = api.create_repo("user/demo", repo_type="dataset")
    ...     api.list_repo_files("user/demo", repo_type="dataset")
    ['.gitattributes']
"""

from dagster_ds.hub.server._app import create_hub_app as create_hub_app
from dagster_ds.hub.server._errors import HubBadRequestError as HubBadRequestError
from dagster_ds.hub.server._errors import HubConflictError as HubConflictError
from dagster_ds.hub.server._errors import HubDataDirError as HubDataDirError
from dagster_ds.hub.server._errors import HubEntryNotFoundError as HubEntryNotFoundError
from dagster_ds.hub.server._errors import HubForbiddenError as HubForbiddenError
from dagster_ds.hub.server._errors import HubNotFoundError as HubNotFoundError
from dagster_ds.hub.server._errors import HubPayloadTooLargeError as HubPayloadTooLargeError
from dagster_ds.hub.server._errors import (
    HubRepositoryNotFoundError as HubRepositoryNotFoundError,
)
from dagster_ds.hub.server._errors import HubRevisionNotFoundError as HubRevisionNotFoundError
from dagster_ds.hub.server._errors import HubStaleParentError as HubStaleParentError
from dagster_ds.hub.server._errors import HubTimeoutError as HubTimeoutError
from dagster_ds.hub.server._errors import HubTooManyRequestsError as HubTooManyRequestsError
from dagster_ds.hub.server._errors import HubUnauthorizedError as HubUnauthorizedError
from dagster_ds.hub.server._errors import (
    HubUnsupportedMediaTypeError as HubUnsupportedMediaTypeError,
)
from dagster_ds.hub.server._errors import LocalHubError as LocalHubError
from dagster_ds.hub.server._errors import LocalHubStartError as LocalHubStartError
from dagster_ds.hub.server._server import LocalHubServer as LocalHubServer

# Internal: for the other dagster_ds packages only; not public API.
from dagster_ds.hub.server._settings import LOOPBACK_HOSTS as LOOPBACK_HOSTS

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
    "LocalHubServer",
    "LocalHubStartError",
    "create_hub_app",
]

#: Names other dagster_ds packages import from here; not public API (may change).
__internal__ = [
    "LOOPBACK_HOSTS",
]

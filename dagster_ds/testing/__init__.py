"""A local server speaking the Hugging Face Hub HTTP API, for tests and offline pipelines.

``huggingface_hub`` (with Xet disabled) and ``datasets.load_dataset`` accept it as
their Hub: create repos, push commits with LFS files, open pull-request refs,
list trees and download files, all on this machine. For pytest, add
``pytest_plugins = ["dagster_ds.testing.pytest_plugin"]`` to ``conftest.py`` and
use the ``local_hub`` fixture.

Example:
    >>> from huggingface_hub import HfApi
    >>> from dagster_ds.testing import LocalHubServer
    >>> with LocalHubServer() as hub:
    ...     api = HfApi(endpoint=hub.endpoint, token="anything")
    ...     _ = api.create_repo("user/demo", repo_type="dataset")
    ...     api.list_repo_files("user/demo", repo_type="dataset")
    ['.gitattributes']
"""

from dagster_ds.testing._app import create_hub_app as create_hub_app
from dagster_ds.testing._server import LocalHubServer as LocalHubServer

__all__ = [
    "LocalHubServer",
    "create_hub_app",
]

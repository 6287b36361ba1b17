"""Test helpers: the pytest plugin, and the local Hub server re-exported.

The server lives in `dagster_ds.hub.server`; it is re-exported here for compatibility.

For pytest, add ``pytest_plugins = ["dagster_ds.testing.pytest_plugin"]`` to
``conftest.py`` and use the ``local_hub`` fixture.

Example:
    >>> from huggingface_hub import HfApi
    >>> from dagster_ds.testing import LocalHubServer
    >>> with LocalHubServer() as hub:
    ...     api = HfApi(endpoint=hub.endpoint, token="anything")
    ...     _ = api.create_repo("user/demo", repo_type="dataset")
    ...     api.list_repo_files("user/demo", repo_type="dataset")
    ['.gitattributes']
"""

from dagster_ds.hub.server import LocalHubServer as LocalHubServer
from dagster_ds.hub.server import create_hub_app as create_hub_app

__all__ = [
    "LocalHubServer",
    "create_hub_app",
]

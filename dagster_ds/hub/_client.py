"""The Hub client: which endpoint, an ``HfApi`` for it, and Hub errors turned into ours.

``huggingface_hub`` is imported here, lazily, so that ``import dagster_ds`` stays
light. The endpoint is, in order: the ``endpoint=`` argument, ``HF_ENDPOINT`` read
*when the call is made* (``huggingface_hub`` itself reads it once, at import), then
``huggingface_hub``'s default (https://huggingface.co). A loopback endpoint is a
local Hub (`dagster_ds.testing.LocalHubServer`), which speaks LFS but not Xet: for
it, Xet and telemetry are switched off in this process (and in processes it
starts, through the environment).

Every message built here has the token replaced by ``***``, whatever the server
echoed.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal, NoReturn
from urllib.parse import urlsplit

from dagster_ds.errors import (
    DagsterDsError,
    HubAuthError,
    HubRequestError,
    InvalidRepoIdError,
    RepoNotFoundError,
    RevisionNotFoundError,
)

if TYPE_CHECKING:
    from huggingface_hub import HfApi, HfFileSystem

REPO_TYPE = "dataset"
LIBRARY = "dagster_ds"
# What this package sends a local Hub when no token is given (any-token mode accepts it).
LOCAL_HUB_TOKEN = "dagster-ds-local-hub"
REPO_NAME_MAX = 96
#: What a request needs of its token: reads need read access, pushes write access.
Access = Literal["read", "write"]
_REPO_NAME = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?")


def resolve_endpoint(endpoint: str | None) -> str:
    """The Hub endpoint to use: the argument, else ``HF_ENDPOINT``, else the default Hub."""
    if endpoint:
        return endpoint.rstrip("/")
    from_env = os.environ.get("HF_ENDPOINT")
    if from_env:
        return from_env.rstrip("/")
    from huggingface_hub import constants

    return constants.ENDPOINT.rstrip("/")


def is_local_endpoint(endpoint: str) -> bool:
    """Whether ``endpoint`` is on this machine (a loopback address or ``localhost``)."""
    host = urlsplit(endpoint).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def disable_xet_and_telemetry() -> None:
    """Keep ``huggingface_hub`` off Xet and telemetry, now and in subprocesses.

    Both are read at import time, so the variables are set for later imports
    and the already-imported constants are patched. A local Hub speaks LFS, not
    Xet, and telemetry's user-agent code would fetch from huggingface.co.
    """
    os.environ["HF_HUB_DISABLE_XET"] = "1"
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    from huggingface_hub import constants

    constants.HF_HUB_DISABLE_XET = True
    constants.HF_HUB_DISABLE_TELEMETRY = True


def prepare_for_endpoint(endpoint: str) -> None:
    """Switch Xet and telemetry off for a local endpoint, here and in child processes."""
    if is_local_endpoint(endpoint):
        disable_xet_and_telemetry()


def is_valid_repo_name(part: str) -> bool:
    """Whether ``part`` is a valid namespace or repository name, by the Hub's rules.

    Letters, digits, ``-``, ``_`` and ``.``; 1 to 96 characters; no ``--`` or
    ``..``; not starting or ending with ``-`` or ``.``; not ending with ``.git``.
    """
    return (
        len(part) <= REPO_NAME_MAX
        and _REPO_NAME.fullmatch(part) is not None
        and "--" not in part
        and ".." not in part
        and not part.endswith(".git")
    )


def is_valid_repo_id(repo_id: object) -> bool:
    """Whether ``repo_id`` is ``name`` or ``namespace/name`` with valid parts."""
    if not isinstance(repo_id, str):
        return False
    parts = repo_id.split("/")
    return 1 <= len(parts) <= 2 and all(is_valid_repo_name(part) for part in parts)


def check_repo_id(repo_id: object) -> str:
    """``repo_id`` if it is a valid dataset repository id, else `InvalidRepoIdError`."""
    valid = is_valid_repo_id(repo_id) and len(str(repo_id)) <= REPO_NAME_MAX
    if not valid:
        raise InvalidRepoIdError(
            f"Invalid repository id {repo_id!r}: use 'name' or 'namespace/name' with letters, "
            "digits, '-', '_' and '.', at most 96 characters, no '--' or '..', not starting "
            "with '.' or '-' (e.g. 'my-org/my-dataset')."
        )
    return repo_id  # pyright: ignore[reportReturnType]


class HubClient:
    """An ``HfApi`` (and ``HfFileSystem``) for one endpoint and token; never shows the token."""

    def __init__(self, endpoint: str | None, token: str | None) -> None:
        self.endpoint = resolve_endpoint(endpoint)
        prepare_for_endpoint(self.endpoint)
        from huggingface_hub import HfApi, get_token

        if token is None and is_local_endpoint(self.endpoint):
            # A local Hub in any-token mode still wants *a* token for writes.
            token = get_token() or LOCAL_HUB_TOKEN
        self._token = token
        self.api: HfApi = HfApi(endpoint=self.endpoint, token=token, library_name=LIBRARY)
        self._fs: HfFileSystem | None = None

    def __repr__(self) -> str:
        return f"HubClient(endpoint={self.endpoint!r})"

    @property
    def fs(self) -> HfFileSystem:
        """An ``HfFileSystem`` on the same endpoint, with the same token."""
        if self._fs is None:
            from huggingface_hub import HfFileSystem

            self._fs = HfFileSystem(endpoint=self.endpoint, token=self._token)
        return self._fs

    def storage_options(self) -> dict[str, Any]:
        """Fsspec options that open ``hf://`` URLs on this endpoint with this token."""
        return {"endpoint": self.endpoint, "token": self._token}

    def read_text(self, repo_id: str, commit: str, path: str) -> str:
        """The text of a file of a dataset repository at a commit."""
        data = self.fs.cat_file(f"datasets/{repo_id}@{commit}/{path}")
        return data.decode("utf-8") if isinstance(data, bytes) else str(data)

    def redact(self, text: str) -> str:
        """``text`` with the token replaced by ``***``."""
        if self._token and len(self._token) >= 4:
            return text.replace(self._token, "***")
        return text

    def url(self, repo_id: str) -> str:
        """The web address of a dataset repository on this endpoint."""
        return f"{self.endpoint}/datasets/{repo_id}"

    @property
    def has_token(self) -> bool:
        """Whether requests carry a token of the user's (not the local Hub placeholder)."""
        if self._token is not None:
            return self._token != LOCAL_HUB_TOKEN
        from huggingface_hub import get_token

        return get_token() is not None

    @contextlib.contextmanager
    def errors(
        self, action: str, repo_id: str, revision: str | None = None, *, access: Access
    ) -> Iterator[None]:
        """Turn ``huggingface_hub`` errors raised inside into `HubRequestError` subclasses.

        ``access`` is what the requests inside need of the token (``"read"`` for a
        load, ``"write"`` for a push): a refusal asks for a token with that access.
        """
        try:
            yield
        except DagsterDsError:
            raise
        except Exception as error:
            self.raise_translated(error, action, repo_id, revision, access=access)

    def raise_translated(
        self,
        error: Exception,
        action: str,
        repo_id: str,
        revision: str | None,
        *,
        access: Access,
    ) -> NoReturn:
        """Raise the `HubRequestError` that explains ``error`` (from ``huggingface_hub``)."""
        from huggingface_hub import errors as hf_errors

        where = f"{action} of the dataset repository {repo_id!r} on {self.endpoint}"
        status = _status(error)
        detail = self.redact(_first_line(error))
        if isinstance(error, hf_errors.RevisionNotFoundError):
            raise RevisionNotFoundError(
                f"{where}: revision {revision!r} does not exist ({detail}). Use an existing "
                f"branch, tag or commit (HfApi().list_repo_refs({repo_id!r}, "
                "repo_type='dataset')), or create the branch first with HfApi().create_branch()."
            ) from error
        if status in (401, 403) or isinstance(error, hf_errors.LocalTokenNotFoundError):
            refusal = (
                "the Hub refused the token"
                if self.has_token
                else f"the Hub needs a token to {'read' if access == 'read' else 'write to'} "
                "this repository, and none was given"
            )
            raise HubAuthError(
                f"{where}: {refusal} (HTTP {status}: {detail}). Pass a valid token with "
                f"{access} access (token=... or HF_TOKEN), or check the endpoint."
            ) from error
        if isinstance(error, hf_errors.RepositoryNotFoundError):
            hint = (
                "no local file or folder has that name either"
                if action == "load_dataset"
                else "push_to_hub creates missing repositories"
            )
            raise RepoNotFoundError(
                f"{where}: no such dataset repository, or the token cannot see it ({detail}). "
                f"Check the id and the token ({hint})."
            ) from error
        if isinstance(error, hf_errors.HFValidationError):
            raise InvalidRepoIdError(f"{where}: {detail}") from error
        if isinstance(error, hf_errors.HfHubHTTPError):
            raise HubRequestError(
                f"{where} failed with HTTP {status}: {detail}. Retry later, or check the "
                "arguments named in the message."
            ) from error
        if _is_transport_error(error):
            raise HubRequestError(
                f"{where}: cannot reach the Hub ({type(error).__name__}: {detail}). Check the "
                "endpoint (endpoint=... or HF_ENDPOINT) and the network."
            ) from error
        raise error


def _is_transport_error(error: Exception) -> bool:
    """Whether ``error`` is the HTTP client's failure to reach the server (refused, timeout...)."""
    if isinstance(error, ConnectionError | TimeoutError):
        return True
    module = type(error).__module__.split(".")[0]
    return module.startswith(("httpx", "httpcore", "huggingface_hub", "requests", "urllib3"))


def _status(error: Exception) -> int | None:
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None)


def _first_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    interesting = [line for line in lines if not line.startswith("For more information")]
    return " ".join(interesting[:3])[:500] or type(error).__name__

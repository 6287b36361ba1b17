"""HubResource: where finished datasets are pushed, the Hugging Face Hub or an embedded one.

- ``token`` set (``HubResource(token=dg.EnvVar("HF_TOKEN"))``): the real Hub,
  or ``endpoint`` when given (a Hub mirror or enterprise deployment);
- ``endpoint`` only: that server, without a token (a `LocalHubServer` you run);
- neither: an embedded `LocalHubServer`, started when a step first pushes
  (lazily: a step that never pushes starts nothing) and stopped after it, with
  its repositories kept in ``local_data_dir`` (default: ``dagster_ds_hub`` in the
  Dagster instance's storage folder), so pipelines run offline and the pushed
  history survives between runs. The embedded Hub of an instance keeps one
  port, recorded in that folder (``port.json``), so the Hub links recorded on
  materializations stay valid: they open whenever that Hub is served again
  (``make ui`` serves it next to the web UI; ``dagster-ds hub serve --data-dir
  <folder> --stable-port`` does too).

The client never uses Xet or telemetry against the embedded server
(``HF_HUB_DISABLE_XET=1``, ``HF_HUB_DISABLE_TELEMETRY=1``). Pushes to one
repository from several step processes of this machine are serialised by a
file lock, so two splits pushed concurrently never race on the dataset card.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dagster as dg
from filelock import FileLock
from pydantic import Field, PrivateAttr

from dagster_ds.errors import DatasetAssetDefinitionError
from dagster_ds.hub import LOCAL_HUB_TOKEN, disable_xet_and_telemetry, is_valid_repo_id

if TYPE_CHECKING:
    from dagster_ds.arrow import Dataset, DatasetDict
    from dagster_ds.hub import PushResult
    from dagster_ds.hub.server import LocalHubServer
    from dagster_ds.streaming import IterableDataset

__all__ = ["HubResource", "HubTarget"]

HUB_ENDPOINT = "https://huggingface.co"


@dataclass(frozen=True)
class PushedAsset:
    """One asset in a Hub commit: its split, the data version pushed, and what it replaces.

    ``previous_fingerprint`` and ``previous_rows`` describe the version the last
    push of this split recorded (None: not known).
    """

    asset: str
    split: str
    fingerprint: str
    rows: int | None = None
    previous_fingerprint: str | None = None
    previous_rows: int | None = None

    def change(self) -> str:
        """What the push changes in this split, in a few words (for the commit title)."""
        rows = f"{self.rows:,} rows" if self.rows is not None else "rows unknown"
        if self.previous_fingerprint is None:
            return f"{self.split}: {rows} ({self.fingerprint[:8]})"
        if self.previous_fingerprint == self.fingerprint:
            return f"{self.split}: unchanged"
        counted = ""
        if self.rows is not None and self.previous_rows is not None:
            added = self.rows - self.previous_rows
            counted = f"{self.previous_rows:,} → {self.rows:,} rows ({added:+,}), "
        return f"{self.split}: {counted}{self.previous_fingerprint[:8]} → {self.fingerprint[:8]}"


def hub_commit_message(run_id: str | None, pushed: Sequence[PushedAsset]) -> tuple[str, str]:
    """The title and description of a commit pushing ``pushed``: what changed, run id.

    The title says, per split, the row count before and after and the data
    versions old → new: ``train: 1,204 → 1,216 rows (+12), 3f2a8c91 → 9b1c2d3e``.
    Built from names, fingerprints, counts and the run id only, never from a
    token or any other configuration value.
    """
    from dagster_ds import __version__

    run = f" (Dagster run {run_id[:8]})" if run_id else ""
    title = "; ".join(entry.change() for entry in pushed) + run
    lines = [
        f"- split `{entry.split}` from asset `{entry.asset}`: data version"
        f" {entry.previous_fingerprint or '(none recorded)'} → {entry.fingerprint}"
        for entry in pushed
    ]
    origin = f"Pushed by dagster_ds {__version__}"
    lines += ["", f"{origin} from Dagster run {run_id}." if run_id else f"{origin}."]
    return title, "\n".join(lines)


@dataclass(frozen=True)
class HubTarget:
    """Where a dataset asset is pushed: a dataset repository, a split and a config.

    Attributes:
        repo_id: ``"namespace/name"`` of the dataset repository (created if missing).
        split: The split name; None uses the dataset's own split, else ``"train"``.
        config_name: The dataset config (subset) the split belongs to.
        revision: The branch to push to; None is the repository's main branch.
        private: Whether a repository created by the push is private.

    Example:
        >>> HubTarget("me/python-docs", split="test").split
        'test'
    """

    repo_id: str
    split: str | None = None
    config_name: str = "default"
    revision: str | None = None
    private: bool | None = None

    def __post_init__(self) -> None:
        if not is_valid_repo_id(self.repo_id):
            raise DatasetAssetDefinitionError(
                f"push_to_hub repo id {self.repo_id!r} is not valid: use 'namespace/name' with"
                " letters, digits, '-', '_' and '.' (at most 96 characters each, no '--' or"
                " '..', not starting or ending with '-' or '.')."
            )

    def describe(self) -> str:
        """``repo_id:config/split@revision``, as recorded on materializations."""
        return f"{self.repo_id}:{self.config_name}/{self.split or '*'}@{self.revision or 'main'}"

    @classmethod
    def coerce(cls, value: HubTarget | str) -> HubTarget:
        """A `HubTarget` from itself or from a repo id string."""
        return value if isinstance(value, HubTarget) else cls(value)


class HubResource(dg.ConfigurableResource):
    """The Hugging Face Hub a pipeline pushes to; an embedded local Hub when none is configured.

    Attributes:
        token: A Hub token (use ``dg.EnvVar("HF_TOKEN")``); None with no
            ``endpoint`` starts the embedded local Hub.
        endpoint: The Hub's URL; None is huggingface.co when a token is set.
        local_data_dir: Where the embedded Hub keeps its repositories (default:
            ``dagster_ds_hub`` in the Dagster instance's storage folder).

    Example:
        >>> import dagster as dg
        >>> offline = HubResource()  # the embedded local Hub
        >>> online = HubResource(token=dg.EnvVar("HF_TOKEN"))  # huggingface.co
    """

    token: str | None = Field(default=None, description="Hub token; use EnvVar('HF_TOKEN').")
    endpoint: str | None = Field(
        default=None, description="Hub URL; default huggingface.co with a token, else embedded."
    )
    local_data_dir: str | None = Field(
        default=None, description="Data folder of the embedded local Hub."
    )
    check_hub_when_unchanged: bool = Field(
        default=False,
        description="Ask the Hub even when an unchanged asset already recorded its push.",
    )

    _server: LocalHubServer | None = PrivateAttr(default=None)
    _data_dir: str | None = PrivateAttr(default=None)
    _lock_dir: str | None = PrivateAttr(default=None)

    @classmethod
    def from_env(
        cls, token_var: str = "HF_TOKEN", endpoint_var: str = "HF_ENDPOINT", **kwargs: Any
    ) -> HubResource:
        """A resource reading the token and endpoint from environment variables, if they are set.

        ``HubResource(token=dg.EnvVar("HF_TOKEN"))`` fails when the variable is
        unset; this gives the embedded Hub instead, and shows ``HF_TOKEN`` (never
        its value) in the UI when it is set.

        Example:
            >>> hub = HubResource.from_env()  # embedded Hub unless HF_TOKEN/HF_ENDPOINT are set
        """
        token = dg.EnvVar(token_var) if os.environ.get(token_var) else None
        endpoint = dg.EnvVar(endpoint_var) if os.environ.get(endpoint_var) else None
        return cls(token=token, endpoint=endpoint, **kwargs)  # pyright: ignore[reportArgumentType]

    @property
    def is_embedded(self) -> bool:
        """Whether this resource runs the embedded local Hub (no token, no endpoint)."""
        return self.token is None and self.endpoint is None

    @property
    def url(self) -> str:
        """The Hub's base URL; for the embedded Hub, its server is started on first use."""
        if self.endpoint is not None:
            return self.endpoint.rstrip("/")
        if self.token is not None:
            return HUB_ENDPOINT
        return self._embedded().endpoint

    @property
    def web_url(self) -> str:
        """The Hub's lasting web address: for the embedded Hub, its recorded port."""
        if self.is_embedded:
            return self._embedded().stable_endpoint
        return self.url

    @property
    def identity(self) -> str:
        """Which Hub this is, stable across runs (the embedded one's port is not)."""
        if self.is_embedded:
            return f"embedded local Hub in {self._data_dir or self.local_data_dir}"
        return self.url

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Generator[HubResource]:
        """Prepare the step's Hub; an embedded server started by a push is always stopped."""
        if self.is_embedded:
            self._data_dir = self.local_data_dir or _default_data_dir(context)
            self._lock_dir = self._data_dir.rstrip("/") + ".push-locks"  # not inside the store
        else:
            self._lock_dir = os.path.join(tempfile.gettempdir(), "dagster-ds-push-locks")
        try:
            yield self
        finally:
            server, self._server = self._server, None
            if server is not None:
                server.stop()

    def _embedded(self) -> LocalHubServer:
        if self._server is None:
            if self._data_dir is None:
                raise DatasetAssetDefinitionError(
                    "The embedded local Hub runs inside a run's step only: use this HubResource"
                    " from an asset, or configure endpoint= or token=."
                )
            disable_xet_and_telemetry()
            from dagster_ds.hub.server import LocalHubServer

            os.makedirs(self._data_dir, exist_ok=True)
            self._server = LocalHubServer(self._data_dir, stable_port=True).start()
        return self._server

    def client_token(self) -> str | None:
        """The token to give ``huggingface_hub`` (a placeholder for the embedded Hub)."""
        return LOCAL_HUB_TOKEN if self.is_embedded else self.token

    def repo_url(self, repo_id: str) -> str:
        """The web URL of a dataset repository on this Hub."""
        return f"{self.web_url}/datasets/{repo_id}"

    def commit_url(self, repo_id: str, commit: str) -> str:
        """The web URL of one commit of a dataset repository."""
        return f"{self.repo_url(repo_id)}/commit/{commit}"

    def push(
        self,
        dataset: Dataset | IterableDataset,
        target: HubTarget,
        *,
        commit_message: str | None = None,
        commit_description: str | None = None,
    ) -> PushResult:
        """Push ``dataset`` (or a stream) to ``target`` in one commit; none if the Hub has it.

        ``commit_message`` and ``commit_description`` title and describe the
        commit (`dataset_asset` names the asset, its fingerprint and the run).

        Returns:
            The `PushResult`: ``skipped`` (True when the Hub already recorded this
            fingerprint for the split), ``commit_oid`` and ``commit_url``.

        Raises:
            HubRequestError: The Hub refused or failed the push (a bad repo id, a
                refused token, an unreachable endpoint...); nothing was committed.
        """
        split = target.split or dataset.split or "train"
        with self.repo_lock(target.repo_id):
            result = dataset.push_to_hub(
                target.repo_id,
                config_name=target.config_name,
                split=split,
                token=self.client_token(),
                revision=target.revision,
                private=target.private,
                endpoint=self.url,
                commit_message=commit_message,
                commit_description=commit_description,
            )
        return self._lasting_link(target, result)

    def push_splits(
        self,
        splits: DatasetDict,
        target: HubTarget,
        *,
        commit_message: str | None = None,
        commit_description: str | None = None,
    ) -> PushResult:
        """Push every split of ``splits`` to ``target``'s config in ONE commit; none if unchanged.

        The config's splits become exactly these (``target.split`` is ignored);
        a split whose fingerprint the Hub already records keeps its files.

        Raises:
            HubRequestError: The Hub refused or failed the push; nothing was committed.
        """
        with self.repo_lock(target.repo_id):
            result = splits.push_to_hub(
                target.repo_id,
                config_name=target.config_name,
                token=self.client_token(),
                revision=target.revision,
                private=target.private,
                endpoint=self.url,
                commit_message=commit_message,
                commit_description=commit_description,
            )
        return self._lasting_link(target, result)

    def _lasting_link(self, target: HubTarget, result: PushResult) -> PushResult:
        if self.is_embedded:
            # The step's server may have a port of its own; the link uses the lasting one.
            url = self.commit_url(target.repo_id, result.commit_oid)
            result = dataclasses.replace(result, commit_url=url)
        return result

    @contextmanager
    def repo_lock(self, repo_id: str) -> Iterator[None]:
        """Hold this machine's lock on ``repo_id`` (one push per repository at a time)."""
        folder = self._lock_dir or os.path.join(tempfile.gettempdir(), "dagster-ds-push-locks")
        os.makedirs(folder, exist_ok=True)
        with FileLock(os.path.join(folder, repo_id.replace("/", "--") + ".lock")):
            yield


def _default_data_dir(context: dg.InitResourceContext) -> str:
    instance = context.instance
    if instance is not None:
        return os.path.join(instance.storage_directory(), "dagster_ds_hub")
    return os.path.abspath(os.path.join(".dagster_ds", "hub"))

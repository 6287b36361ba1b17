"""The local Hub's settings and limits, shared by every part of the server."""

from __future__ import annotations

from dataclasses import dataclass, field

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
MiB = 1024 * 1024


@dataclass(frozen=True)
class HubSettings:
    """How a local Hub behaves, and its limits.

    ``token=None`` is any-token mode: every token is accepted, but writes and
    reads of private repos still need *a* token. Sizes are bytes, times seconds:
    ``body_timeout`` is the longest pause while a body arrives, ``stale_after``
    how long a temporary file or upload part may sit unchanged before the sweep
    (at start and every ``sweep_interval``) removes it.
    """

    token: str | None = field(default=None, repr=False)
    user: str = "user"
    lfs_threshold: int = 10 * MiB
    multipart_threshold: int = 64 * MiB
    multipart_chunk_size: int = 16 * MiB
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    max_json_body: int = 32 * MiB
    max_commit_body: int = 256 * MiB
    max_lfs_file_size: int = 50 * 1024 * MiB
    max_lfs_objects_per_batch: int = 1000
    max_lfs_parts: int = 10_000
    max_upload_sessions: int = 1000
    upload_session_ttl: float = 3600.0
    body_timeout: float = 30.0
    stale_after: float = 300.0
    sweep_interval: float = 60.0

"""The cache's folder layout, and the names used in it.

```
<root>/objects/<fp[:2]>/<fp>/      published entries: data files, manifest.json (on object
                                   stores, a builder holding the lock writes here in place)
<root>/tmp/<label>-<pid>_<start>-<token>-<host>/   in-flight writes and entries being evicted
<root>/quarantine/<fp>-<time>-<token>/     corrupt entries, kept for inspection until gc
<root>/locks/<fp[:2]>/<fp>.lock    one lock per fingerprint (build, publish, evict)
<root>/leases/readers               byte-range reader locks, one byte per entry (local)
<root>/leases/<fp[:2]>/<fp>/       one file per reader holding the entry open (object
                                   stores), and ``evicting`` while gc removes it
                                   (see _leases.py)
```
"""

from __future__ import annotations

import datetime
import os
import re
import secrets
from collections.abc import Iterator

from dagster_ds.cache._identity import Owner, current_owner
from dagster_ds.cache._storage import Storage
from dagster_ds.errors import InvalidFingerprintError

MANIFEST = "manifest.json"
LAST_USED = "last-used"
RESERVED_NAMES = (MANIFEST, LAST_USED)
ENV_VAR = "DAGSTER_DS_CACHE"

_FINGERPRINT = re.compile(r"[0-9a-f]{32}")


def check_fingerprint(fingerprint: object) -> str:
    """``fingerprint`` if it is 32 lowercase hexadecimal characters; raises otherwise."""
    if isinstance(fingerprint, str) and _FINGERPRINT.fullmatch(fingerprint):
        return fingerprint
    raise InvalidFingerprintError(
        f"Invalid fingerprint {fingerprint!r}: a cache key must be 32 lowercase hexadecimal "
        "characters, as returned by Hasher.hash() or update_fingerprint()."
    )


def is_fingerprint(name: str) -> bool:
    return _FINGERPRINT.fullmatch(name) is not None


def default_cache_root() -> str:
    """The cache root used when none is given: ``$DAGSTER_DS_CACHE`` or ``~/.cache/dagster_ds``.

    Example:
        >>> import os
        >>> os.environ["DAGSTER_DS_CACHE"] = "s3://team-bucket/cache"
        >>> default_cache_root()
        's3://team-bucket/cache'
    """
    configured = os.environ.get(ENV_VAR, "").strip()
    return configured or os.path.join(os.path.expanduser("~"), ".cache", "dagster_ds")


def make_tmp_name(label: str) -> str:
    """``<label>-<pid>_<process start>-<token>-<host>``: unique, and names its owner."""
    owner = current_owner()
    return f"{label}-{owner.pid}_{owner.start or 0}-{secrets.token_hex(6)}-{owner.host}"


def tmp_owner(name: str) -> Owner | None:
    """The process that made a ``tmp/`` item, from its name (None if not ours)."""
    parts = name.split("-", 3)
    pid, _, start = parts[1].partition("_") if len(parts) == 4 else ("", "", "")
    if not pid.isdigit() or not start.isdigit():
        return None
    return Owner(parts[3], int(pid), None if start == "0" else start)


def make_quarantine_name(key: str) -> str:
    """A ``quarantine/`` item's name: the key, the moment (to the microsecond), a nonce."""
    moment = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S.%f")
    return f"{key}-{moment}Z-{secrets.token_hex(4)}"


def quarantined_at(name: str) -> float | None:
    """When an item of ``quarantine/`` was put there (Unix time), from its name.

    A name of an earlier release says the second only: the end of that second is
    returned, the latest moment it may have been put there (an entry made in the
    same second then counts as quarantined after it: a recomputation, never a
    damaged entry vouched for).
    """
    parts = name.split("-")
    if len(parts) != 3:
        return None
    for layout, rest in (("%Y%m%dT%H%M%S.%fZ", 0.0), ("%Y%m%dT%H%M%SZ", 1.0 - 1e-6)):
        try:
            moment = datetime.datetime.strptime(parts[1], layout)
        except ValueError:
            continue
        return moment.replace(tzinfo=datetime.UTC).timestamp() + rest
    return None


class Layout:
    """Paths of everything under one cache root."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    @staticmethod
    def entry_parts(key: str) -> tuple[str, str, str]:
        """The folders from the root down to an entry's folder."""
        return ("objects", key[:2], key)

    def entry(self, key: str) -> str:
        return self.storage.join(*self.entry_parts(key))

    def entry_file(self, key: str, name: str) -> str:
        return self.storage.join(*self.entry_parts(key), name)

    def entry_parent(self, key: str) -> str:
        return self.storage.join(*self.entry_parts(key)[:2])

    @property
    def tmp(self) -> str:
        return self.storage.join("tmp")

    def tmp_item(self, *parts: str) -> str:
        return self.storage.join("tmp", *parts)

    @property
    def quarantine(self) -> str:
        return self.storage.join("quarantine")

    def quarantine_item(self, *parts: str) -> str:
        return self.storage.join("quarantine", *parts)

    def lock_dir(self, key: str) -> str:
        return self.storage.join("locks", key[:2])

    def lock_file(self, key: str) -> str:
        return self.storage.join("locks", key[:2], f"{key}.lock")

    def entry_keys(self) -> Iterator[str]:
        """Keys of the folders under ``objects/`` (published or, on object stores, partial)."""
        objects = self.storage.join("objects")
        for prefix in sorted(self.storage.listdir(objects)):
            if len(prefix) != 2:
                continue
            for key in sorted(self.storage.listdir(self.storage.join("objects", prefix))):
                if is_fingerprint(key) and key.startswith(prefix):
                    yield key

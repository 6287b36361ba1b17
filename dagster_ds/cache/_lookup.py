"""Reading an entry: lease, fence check, manifest, verification, quarantine."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from dagster_ds.cache._entry import CacheEntry
from dagster_ds.cache._layout import MANIFEST, Layout
from dagster_ds.cache._leases import Lease
from dagster_ds.cache._manifest import Manifest, ManifestError
from dagster_ds.cache._removal import quarantine
from dagster_ds.cache._usage import touch_last_used
from dagster_ds.cache._verify import ChecksumPolicy, check_files
from dagster_ds.errors import CacheCorruptionWarning


@dataclass(frozen=True)
class Corrupt:
    problems: list[str]
    manifest: bytes  # the manifest.json judged, to quarantine that entry and no other


#: An entry as inspected: fine (manifest and its bytes), corrupt, or absent.
Inspection = tuple[Manifest, bytes] | Corrupt | None


@dataclass(frozen=True)
class Reader:
    layout: Layout
    policy: ChecksumPolicy
    #: False when entries are published under random names (caching off).
    keys_are_fingerprints: bool
    #: False for ``lock_mode="lease"``: lease files, for hosts sharing a folder without locks.
    byte_range_leases: bool = True

    def lease(self, key: str) -> Lease:
        """A new lease on ``key``, of the kind this store uses."""
        return Lease(self.layout, key, byte_range=self.byte_range_leases)

    def open(self, key: str) -> CacheEntry | None:
        """The verified entry under ``key``, holding a new lease; None if absent or corrupt."""
        if not self.layout.storage.exists(self.layout.entry_file(key, MANIFEST)):
            return None
        # Lease first, then the fence, then read: an evictor either sees our lease or
        # we see its fence (see _leases.py).
        lease = self.lease(key)
        try:
            found = None if lease.evicting() else self.inspect(key, self.policy)
            if isinstance(found, Corrupt):
                self.quarantine(key, found, warn=True)
                found = None
            if found is None:
                lease.release()
                return None
            manifest, _ = found
            touch_last_used(self.layout, key)
            return CacheEntry(self.layout, key, manifest, lease)
        except BaseException:
            lease.release()
            raise

    def inspect(self, key: str, policy: ChecksumPolicy) -> Inspection:
        """Check an entry twice before calling it corrupt: it may have been replaced meanwhile."""
        previous: bytes | None = None
        problems: list[str] = []
        data = b""
        for _ in range(2):
            try:
                data = self.layout.storage.read_bytes(self.layout.entry_file(key, MANIFEST))
            except (FileNotFoundError, NotADirectoryError):
                return None
            try:
                manifest = Manifest.from_bytes(data, where=self.layout.entry(key))
            except ManifestError as error:
                problems = [str(error)]
            else:
                problems = self._problems(key, manifest, data, policy)
                if not problems:
                    return manifest, data
            if data == previous:
                break
            previous = data
        return Corrupt(problems, data)

    def _problems(
        self, key: str, manifest: Manifest, data: bytes, policy: ChecksumPolicy
    ) -> list[str]:
        if self.keys_are_fingerprints and manifest.fingerprint != key:
            return [f"manifest.json is for fingerprint {manifest.fingerprint!r}"]
        return check_files(self.layout, key, manifest, data, policy)

    def quarantine(self, key: str, corrupt: Corrupt, *, warn: bool) -> None:
        where = quarantine(self.layout, key, corrupt.manifest)
        if warn:
            warnings.warn(
                f"Cache entry {key!r} in {self.layout.storage.url!r} is corrupt: "
                f"{'; '.join(corrupt.problems)}. It was moved to {where!r} and will be "
                "recomputed. If this recurs, check the disk or storage holding the cache, "
                "then run `dagster-ds cache verify`.",
                CacheCorruptionWarning,
                stacklevel=4,
            )

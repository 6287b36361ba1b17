"""The cache: content-addressed, verified, locked and garbage-collected dataset results.

Every result is stored under its dataset's fingerprint in a `CacheStore`
(``$DAGSTER_DS_CACHE``, default ``~/.cache/dagster_ds``, or any fsspec URL)::

    objects/<fp[:2]>/<fp>/   data-00000-of-0000N.arrow ...  manifest.json
    tmp/                     in-flight writes

Guarantees:

- **Atomic publish.** An entry is written in ``tmp/`` and published by one
  rename of its folder (local folders); on object stores manifest.json is
  written last and is the commit point. Files are fsynced only when asked
  (``fsync=``): what a power loss tears, the next process's first-use checksum
  catches. Readers never see a partial entry;
  a killed writer leaves only ``tmp/`` garbage (on object stores, a builder
  writes in place: files without manifest.json), removed by
  `CacheStore.clean_tmp` and `CacheStore.gc`, or overwritten by the next builder.
- **One builder per fingerprint.** `CacheStore.get_or_create` holds a lock per
  fingerprint (an OS lock locally, released if its holder dies; on object
  stores a heartbeat record made, beaten, taken over when stale and removed by
  conditional writes); others wait and reuse.
- **Verified reads.** Sizes are checked on every lookup, xxh3-128 checksums on
  the first lookup in a process and whenever a file changed (`ChecksumPolicy`).
  A corrupt entry is quarantined with a `CacheCorruptionWarning` and recomputed.
  Manifests are JSON: the cache never unpickles anything.
- **Safe eviction.** `CacheStore.gc` evicts least-recently-used entries, never
  one held open: a `CacheEntry` holds a reader lease until it is closed.

Example:
    >>> store = CacheStore("memory://example")
    >>> fp = "0123456789abcdef0123456789abcdef"
    >>> with store.writer(fp, metadata={"num_rows": 2}) as w:
    ...     w.write_bytes("data-00000-of-00001.arrow", b"...")
    >>> with store.lookup(fp) as entry:
    ...     entry.metadata
    {'num_rows': 2}
"""

# Internal: for the other dagster_ds packages only; not public API.
from dagster_ds.cache._commit import publish_folder as publish_folder
from dagster_ds.cache._entry import CacheEntry as CacheEntry
from dagster_ds.cache._gc import GcReport as GcReport
from dagster_ds.cache._layout import ENV_VAR as ENV_VAR
from dagster_ds.cache._layout import default_cache_root as default_cache_root
from dagster_ds.cache._locks import LockMode as LockMode
from dagster_ds.cache._storage import Storage as Storage
from dagster_ds.cache._storage import open_storage as open_storage
from dagster_ds.cache._store import CacheStore as CacheStore
from dagster_ds.cache._switch import cache_root as cache_root
from dagster_ds.cache._switch import caching_disabled as caching_disabled
from dagster_ds.cache._switch import current_root as current_root
from dagster_ds.cache._switch import disable_caching as disable_caching
from dagster_ds.cache._switch import enable_caching as enable_caching
from dagster_ds.cache._switch import is_caching_enabled as is_caching_enabled
from dagster_ds.cache._units import format_size as format_size
from dagster_ds.cache._units import parse_duration as parse_duration
from dagster_ds.cache._units import parse_size as parse_size
from dagster_ds.cache._usage import EntryInfo as EntryInfo
from dagster_ds.cache._verify import ChecksumPolicy as ChecksumPolicy
from dagster_ds.cache._verify import VerifyReport as VerifyReport
from dagster_ds.cache._writer import EntryWriter as EntryWriter
from dagster_ds.errors import CacheCorruptionWarning as CacheCorruptionWarning

__all__ = [
    "CacheCorruptionWarning",
    "CacheEntry",
    "CacheStore",
    "ChecksumPolicy",
    "EntryInfo",
    "EntryWriter",
    "GcReport",
    "LockMode",
    "VerifyReport",
    "cache_root",
    "caching_disabled",
    "default_cache_root",
    "disable_caching",
    "enable_caching",
    "is_caching_enabled",
]

#: Names other dagster_ds packages import from here; not public API (may change).
__internal__ = [
    "ENV_VAR",
    "Storage",
    "current_root",
    "format_size",
    "open_storage",
    "parse_duration",
    "parse_size",
    "publish_folder",
]

"""Errors and warnings raised by dagster_ds.

Every exception raised on purpose by this package derives from `DagsterDsError`.
Where callers reasonably expect a builtin (``except TypeError``), the subclass
inherits that builtin too::

    DagsterDsError
    ├── UnhashableError (TypeError, pickle.PicklingError)  an object cannot be fingerprinted
    ├── FeatureError (ValueError)       a feature type is malformed or not supported
    │   ├── ClassLabelError             a label name or integer is not in a ClassLabel
    │   └── ClassLabelNamesError (TypeError)  ClassLabel names given as a non-list
    ├── CastError (ValueError)          data cannot be cast to features without loss
    │   └── ColumnMismatchError         the column names differ from the features'
    ├── ColumnNotFoundError (KeyError, ValueError)  a named column is not in the dataset or file
    ├── InvalidSplitError (TypeError)   a DatasetDict value is not a Dataset
    ├── DatasetReleasedError (RuntimeError)  a dataset was used after its ``with`` block
    ├── DataFilesNotFoundError (FileNotFoundError)  a data_files path or pattern matches no file
    ├── InvalidDataFilesError (TypeError)  data_files is not a path, list or dict of paths
    ├── MissingExtraError (ImportError)  an optional dependency (an extra) is not installed
    ├── UnknownFormatError (ValueError)  no reader, writer or output format of that name
    ├── FormatOptionError (ValueError)  a read/write option is invalid or not accepted
    ├── MalformedFileError (ValueError)  a file's content cannot be parsed (path, line)
    ├── InvalidFilterError (ValueError)  a Parquet filter is not valid DNF or an Expression
    ├── RowGroupIndexError (IndexError)  a Parquet row group index is out of range
    ├── SchemaMismatchError (ValueError)  a batch does not fit the schema being written
    │   └── IncompatibleFeaturesError     datasets combined have columns of different types
    ├── UnsupportedTypeError (TypeError)  a column type cannot be written in a format
    ├── DuplicateColumnError (ValueError)  two columns would share a name
    ├── InvalidArgumentError (ValueError)  an argument's value cannot work
    ├── InvalidFingerprintError (ValueError)  not 32 lowercase hexadecimal characters
    ├── TransformOutputError (ValueError)  a map/filter function returned unusable output
    ├── WorkerDiedError (RuntimeError)  a worker process of num_proc died mid-transform
    ├── DistributedError                a transform's shards failed on a cluster (Dask)
    │   ├── ShardTaskError (RuntimeError)  a shard task raised: names the shard and rows
    │   └── StaleWorkerError (RuntimeError)  a worker's code hashes unlike the driver's
    ├── RowCountMismatchError (ValueError)  datasets joined side by side differ in length
    ├── InvalidStateError (ValueError)  a state_dict does not fit the streaming dataset
    ├── NotASavedDatasetError (FileNotFoundError)  load_from_disk found no saved dataset
    ├── SaveConflictError (RuntimeError)  concurrent save_to_disk calls kept replacing a folder
    ├── HubRequestError                             a Hugging Face Hub refused or failed a request
    │   ├── InvalidRepoIdError (InvalidArgumentError)  a repository id is malformed
    │   ├── HubAuthError (PermissionError)          the token is missing, wrong or lacks rights
    │   ├── RepoNotFoundError (LookupError)         no such dataset repository (or no access)
    │   ├── RevisionNotFoundError (LookupError)     no such branch, tag or commit in a repository
    │   └── HubFeaturesMismatchError (ValueError)   pushed features differ from the config's others
    ├── CacheError                                  a cache operation failed
    │   ├── CacheMetadataError (TypeError)          entry metadata is not JSON data
    │   ├── CacheWriterError (ValueError)           an entry writer was misused
    │   ├── CacheFileNotFoundError (KeyError)       an entry has no file of that name
    │   ├── CacheFormatError (ValueError)           an entry's manifest format is unsupported
    │   ├── CacheLockTimeoutError (TimeoutError)    waited too long for a fingerprint's lock
    │   ├── CacheStoreUnavailableError (FileNotFoundError)  a read-only store (read_from) is gone
    │   └── CacheStorageError (OSError)             writing an entry failed (e.g. disk full)
    ├── OrchestrationError                          a dataset asset, source or resource failed
    │   ├── DatasetAssetDefinitionError (ValueError)  a dataset asset or source is declared wrongly
    │   ├── DatasetAssetOutputError (TypeError)     a transform returned something not a dataset
    │   ├── DatasetSourceNotFoundError (FileNotFoundError)  a source's path matches no file
    │   └── DatasetNotStoredError (FileNotFoundError)  storage lacks a recorded fingerprint
    └── LocalHubError                               the local Hub server failed or refused
                                                    (its subclasses: dagster_ds.hub.server)

    DagsterDsWarning (UserWarning)
    ├── UnhashableTransformWarning      a transform got a random fingerprint
    ├── HiddenInputWarning              an asset function reads what its hash cannot see
    ├── UnsupportedFeatureWarning       stored features hold a type we do not model
    ├── AnchorDifferenceWarning         a call differs from `datasets` on purpose (README)
    ├── CacheCorruptionWarning          a corrupt cache entry was quarantined
    └── DistributedStorageWarning       the cache is a local path but the cluster is not local

Messages say what failed, show the offending value, and say how to fix it.

`HubRequestError` and its subclasses are raised on the client side (`push_to_hub`,
`load_dataset` of a Hub repository); their messages never contain the token.
The ``LocalHubError`` family lives with the local Hub server, in
`dagster_ds.hub.server` (so this module does not import the server); it is
rooted in `DagsterDsError` like every other error here.
"""

from __future__ import annotations

import pickle

__all__ = [
    "AnchorDifferenceWarning",
    "CacheCorruptionWarning",
    "CacheError",
    "CacheFileNotFoundError",
    "CacheFormatError",
    "CacheLockTimeoutError",
    "CacheMetadataError",
    "CacheStoreUnavailableError",
    "CacheWriterError",
    "CastError",
    "ClassLabelError",
    "ClassLabelNamesError",
    "ColumnMismatchError",
    "ColumnNotFoundError",
    "DagsterDsError",
    "DagsterDsWarning",
    "DataFilesNotFoundError",
    "DatasetAssetDefinitionError",
    "DatasetAssetOutputError",
    "DatasetNotStoredError",
    "DatasetReleasedError",
    "DatasetSourceNotFoundError",
    "DuplicateColumnError",
    "FeatureError",
    "FormatOptionError",
    "HiddenInputWarning",
    "HubAuthError",
    "HubFeaturesMismatchError",
    "HubRequestError",
    "IncompatibleFeaturesError",
    "InvalidArgumentError",
    "InvalidDataFilesError",
    "InvalidFilterError",
    "InvalidFingerprintError",
    "InvalidRepoIdError",
    "InvalidSplitError",
    "InvalidStateError",
    "MalformedFileError",
    "NotASavedDatasetError",
    "OrchestrationError",
    "RepoNotFoundError",
    "RevisionNotFoundError",
    "RowCountMismatchError",
    "RowGroupIndexError",
    "SaveConflictError",
    "SchemaMismatchError",
    "TransformOutputError",
    "UnhashableError",
    "UnhashableTransformWarning",
    "UnknownFormatError",
    "UnsupportedFeatureWarning",
    "UnsupportedTypeError",
]


class DagsterDsError(Exception):
    """Base class of every error raised by dagster_ds."""


class UnhashableError(DagsterDsError, TypeError, pickle.PicklingError):
    """An object cannot be hashed, for example a closure holding a lock.

    It is a ``TypeError`` (as the anchor raises) and a ``pickle.PicklingError``.

    Attributes:
        path: Where the offending object sits, outermost first, for example
            ``("argument 'function'", "<function f>", "closure variable 'lock'")``,
            which reads "closure variable 'lock' of <function f> of argument
            'function'".
        reason: Why it cannot be hashed, usually the pickling error's message.
    """

    def __init__(self, path: tuple[str, ...], reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(self.explanation)

    @property
    def explanation(self) -> str:
        """The path to the offending object and the reason, as one line."""
        where = " of ".join(reversed(self.path)) if self.path else "the object"
        return f"{where}: {self.reason}"


class FeatureError(DagsterDsError, ValueError):
    """A feature type is malformed (a bad dtype string) or not supported."""


class MissingExtraError(DagsterDsError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""


class ClassLabelError(FeatureError):
    """A label name or integer is not one of a `ClassLabel`'s classes."""


class ClassLabelNamesError(FeatureError, TypeError):
    """ClassLabel ``names`` given as something other than a list (a numpy array, say)."""


class CastError(DagsterDsError, ValueError):
    """Data cannot be cast to the requested features without losing information.

    It is raised when the types cannot be converted at all (a list to an integer)
    and when one value cannot be converted without loss (``2`` to ``bool``); the
    message then names the first offending row and its value.

    Attributes:
        column: The column, with the path inside it for nested data
            (``"answers.text[]"``); None when the whole table is concerned.
        source: The Arrow type of the data, as a string.
        target: The requested type, as a string.
        row: The index of the first offending row, or None for a type-level failure.
        value: The offending value (None for a type-level failure).
    """

    def __init__(
        self,
        message: str,
        *,
        column: str | None = None,
        source: str | None = None,
        target: str | None = None,
        row: int | None = None,
        value: object = None,
    ) -> None:
        super().__init__(message)
        self.column = column
        self.source = source
        self.target = target
        self.row = row
        self.value = value


class ColumnMismatchError(CastError):
    """The data's column names differ from the features' column names.

    Attributes:
        missing: Columns the features define and the data lacks.
        extra: Columns the data has and the features do not define.
    """

    def __init__(self, message: str, *, missing: list[str], extra: list[str]) -> None:
        super().__init__(message)
        self.missing = missing
        self.extra = extra


class DataFilesNotFoundError(DagsterDsError, FileNotFoundError):
    """A ``data_files`` path, directory or glob pattern matches no data file.

    Attributes:
        pattern: The path or pattern as resolved (absolute, with its protocol).
        searched: The folder that was searched.
    """

    def __init__(self, message: str, *, pattern: str, searched: str) -> None:
        self.pattern = pattern
        self.searched = searched
        super().__init__(message)

    def __str__(self) -> str:
        return str(self.args[0])


class InvalidDataFilesError(DagsterDsError, TypeError):
    """``data_files`` is not a path, a list of paths or a dict of splits to paths."""


class UnknownFormatError(DagsterDsError, ValueError):
    """No reader or writer matches a file's extension, or files mix formats."""


class FormatOptionError(DagsterDsError, ValueError):
    """A read or write option is invalid, or not accepted by the chosen format."""


class MalformedFileError(DagsterDsError, ValueError):
    """A file's content cannot be parsed; the message names the file and the line.

    Attributes:
        path: The file's URL or path.
        line: The 1-based line number of the offending line, when known.
        excerpt: The start of the offending line, when known.
    """

    def __init__(
        self, message: str, *, path: str, line: int | None = None, excerpt: str | None = None
    ) -> None:
        self.path = path
        self.line = line
        self.excerpt = excerpt
        super().__init__(message)


class InvalidFilterError(DagsterDsError, ValueError):
    """A row filter is neither valid DNF (list of tuples) nor a usable Expression."""


class RowGroupIndexError(DagsterDsError, IndexError):
    """A Parquet row group index is outside the file's row groups."""


class SchemaMismatchError(DagsterDsError, ValueError):
    """A batch passed to a writer does not fit the schema of the file being written."""


class IncompatibleFeaturesError(SchemaMismatchError):
    """Datasets concatenated or interleaved have a column with different types."""


class UnsupportedTypeError(DagsterDsError, TypeError):
    """A column's type cannot be written in the requested format (e.g. a list in CSV)."""


class ColumnNotFoundError(DagsterDsError, KeyError, ValueError):
    """A column named by a transform or a reader is not in the dataset or file.

    A ``KeyError`` (a missing key) and a ``ValueError`` (what the anchor raises).
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidSplitError(DagsterDsError, TypeError):
    """A `DatasetDict` holds a value that is not a `Dataset` (None, say)."""


class DatasetReleasedError(DagsterDsError, RuntimeError):
    """A dataset was used after the end of its ``with`` block, which released its data."""


class DuplicateColumnError(DagsterDsError, ValueError):
    """A transform would give two columns the same name."""


class InvalidArgumentError(DagsterDsError, ValueError):
    """An argument's value cannot work (a size out of range, conflicting options)."""


class InvalidFingerprintError(DagsterDsError, ValueError):
    """A fingerprint is not 32 lowercase hexadecimal characters."""


class TransformOutputError(DagsterDsError, ValueError):
    """A map or filter function returned output that cannot become a dataset."""


class WorkerDiedError(DagsterDsError, RuntimeError):
    """A worker process of ``num_proc`` died (killed, crashed, out of memory); nothing cached."""


class DistributedError(DagsterDsError):
    """A transform's shards could not be computed on a cluster (`dagster_ds.distributed`)."""


class ShardTaskError(DistributedError, RuntimeError):
    """A shard task raised on a cluster worker; the message names the shard and its rows."""


class StaleWorkerError(DistributedError, RuntimeError):
    """A worker's code for a transform hashes unlike the driver's: it refused to write."""


class RowCountMismatchError(DagsterDsError, ValueError):
    """Datasets concatenated side by side (``axis=1``) do not have the same number of rows."""


class InvalidStateError(DagsterDsError, ValueError):
    """A ``state_dict`` is malformed or was saved from a different streaming pipeline."""


class NotASavedDatasetError(DagsterDsError, FileNotFoundError):
    """load_from_disk found no dataset saved by save_to_disk at a path."""


class SaveConflictError(DagsterDsError, RuntimeError):
    """save_to_disk could not publish: other saves kept replacing the same folder meanwhile."""


class HubRequestError(DagsterDsError):
    """A Hugging Face Hub refused or failed a request made by push_to_hub or load_dataset."""


class InvalidRepoIdError(HubRequestError, InvalidArgumentError):
    """A repository id is not ``name`` or ``namespace/name`` with allowed characters."""


class HubAuthError(HubRequestError, PermissionError):
    """The Hub refused the token: missing, wrong, or without the rights the request needs."""


class RepoNotFoundError(HubRequestError, LookupError):
    """No dataset repository with that id exists, or the token cannot see it."""


class RevisionNotFoundError(HubRequestError, LookupError):
    """No branch, tag, pull-request ref or commit with that name exists in the repository."""


class HubFeaturesMismatchError(HubRequestError, ValueError):
    """A pushed split's features differ from those of the config's other splits on the Hub."""


class CacheError(DagsterDsError):
    """A cache operation failed."""


class CacheMetadataError(CacheError, TypeError):
    """Metadata given for a cache entry is not JSON data (str keys, lists, numbers...)."""


class CacheWriterError(CacheError, ValueError):
    """An entry writer was misused: a bad file name, a file opened twice, use after close."""


class CacheFileNotFoundError(CacheError, KeyError):
    """A cache entry has no file of the requested name."""

    def __str__(self) -> str:
        # KeyError's str() is the repr of its argument; show the message as written.
        return str(self.args[0]) if self.args else ""


class CacheFormatError(CacheError, ValueError):
    """A cache entry was written in a manifest format this version cannot read."""


class CacheLockTimeoutError(CacheError, TimeoutError):
    """Waiting for another process building the same fingerprint took too long."""


class CacheEntryDamagedError(CacheError):
    """A cache entry's file was missing or damaged when read (the entry was quarantined).

    Whatever computed the entry computes it again; a caller reading an entry directly
    looks it up again or recomputes it.
    """


class CacheStoreUnavailableError(CacheError, FileNotFoundError):
    """A store read beneath the written one (``read_from=``) is missing, or vanished mid-run.

    Nothing is ever written to such a store, so nothing was written to it: make it
    reachable again (mount it, check the URL and credentials), or drop it from ``read_from``.
    """


class CacheStorageError(CacheError, OSError):
    """Writing an entry's file failed (a full disk, a lost mount): nothing was published."""


class OrchestrationError(DagsterDsError):
    """A dataset asset, source, IO manager or Hub resource failed (`dagster_ds.orchestration`)."""


class DatasetAssetDefinitionError(OrchestrationError, ValueError):
    """A dataset asset or source is declared wrongly (its parameters, its push target...)."""


class DatasetAssetOutputError(OrchestrationError, TypeError):
    """A dataset asset's function returned something that is not a dataset, or got one."""


class DatasetSourceNotFoundError(OrchestrationError, FileNotFoundError):
    """A dataset source's path, directory or glob matches no data file."""


class DatasetNotStoredError(OrchestrationError, FileNotFoundError):
    """The IO manager's storage does not hold the fingerprint Dagster recorded for an asset."""


class DagsterDsWarning(UserWarning):
    """Base class of every warning emitted by dagster_ds."""


class UnhashableTransformWarning(DagsterDsWarning):
    """A transform could not be hashed, so its result gets a random fingerprint."""


class HiddenInputWarning(DagsterDsWarning):
    """A dataset asset function reads the environment, a file or globals() its hash cannot see."""


class UnsupportedFeatureWarning(DagsterDsWarning):
    """Stored features name a type dagster_ds does not model (e.g. ``Image``).

    The column's feature is then inferred from its Arrow type instead.
    """


class AnchorDifferenceWarning(DagsterDsWarning):
    """A call does something other than `datasets` does, on purpose (README: Where we differ)."""


class CacheCorruptionWarning(DagsterDsWarning):
    """A cache entry failed its size or checksum check; it was quarantined and is recomputed."""


class DistributedStorageWarning(DagsterDsWarning):
    """The cache (or IO manager) is a local path while cluster workers run on other hosts."""

"""Errors and warnings raised by dagster_ds.

Every exception raised on purpose by this package derives from `DagsterDsError`.
Where callers reasonably expect a builtin (``except TypeError``), the subclass
inherits that builtin too::

    DagsterDsError
    ├── UnhashableError (TypeError)              an object cannot be fingerprinted
    ├── DataFilesNotFoundError (FileNotFoundError)  a data_files path or pattern matches no file
    ├── InvalidDataFilesError (TypeError)        data_files is not a path, list or dict of paths
    ├── UnknownFormatError (ValueError)          no reader or writer for a file's extension
    ├── FormatOptionError (ValueError)           a read/write option is invalid or not accepted
    ├── MalformedFileError (ValueError)          a file's content cannot be parsed (path, line)
    ├── InvalidFilterError (ValueError)          a Parquet filter is not valid DNF or an Expression
    ├── ColumnNotFoundError (KeyError)           a requested column is not in the file
    ├── RowGroupIndexError (IndexError)          a Parquet row group index is out of range
    ├── SchemaMismatchError (ValueError)         a batch does not fit the schema being written
    └── UnsupportedTypeError (TypeError)         a column type cannot be written in a format

    DagsterDsWarning (UserWarning)
    └── UnhashableTransformWarning      a transform got a random fingerprint

Messages say what failed, show the offending value, and say how to fix it.
"""

from __future__ import annotations

__all__ = [
    "ColumnNotFoundError",
    "DagsterDsError",
    "DagsterDsWarning",
    "DataFilesNotFoundError",
    "FormatOptionError",
    "InvalidDataFilesError",
    "InvalidFilterError",
    "MalformedFileError",
    "RowGroupIndexError",
    "SchemaMismatchError",
    "UnhashableError",
    "UnhashableTransformWarning",
    "UnknownFormatError",
    "UnsupportedTypeError",
]


class DagsterDsError(Exception):
    """Base class of every error raised by dagster_ds."""


class UnhashableError(DagsterDsError, TypeError):
    """An object cannot be hashed, for example a closure holding a lock.

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


class ColumnNotFoundError(DagsterDsError, KeyError):
    """A requested column is not in the file or batch."""

    def __str__(self) -> str:
        return str(self.args[0])


class RowGroupIndexError(DagsterDsError, IndexError):
    """A Parquet row group index is outside the file's row groups."""


class SchemaMismatchError(DagsterDsError, ValueError):
    """A batch passed to a writer does not fit the schema of the file being written."""


class UnsupportedTypeError(DagsterDsError, TypeError):
    """A column's type cannot be written in the requested format (e.g. a list in CSV)."""


class DagsterDsWarning(UserWarning):
    """Base class of every warning emitted by dagster_ds."""


class UnhashableTransformWarning(DagsterDsWarning):
    """A transform could not be hashed, so its result gets a random fingerprint."""

"""Which parent columns each output column of a transform came from, as pure functions.

One function per kind of transform, used by map-style and streaming datasets
alike (each records the result on the lineage step that made a dataset).
``reads`` is the collection of parent columns a function read, or None for
"all of them" (what is assumed when the reads are not known). A step with
several parents names their columns as `LineageStep.source_name` says.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from dagster_ds.fingerprint._lineage import LineageStep

Sources = dict[str, tuple[str, ...]]


def map_column_sources(
    parent_columns: Sequence[str],
    output_columns: Sequence[str],
    reads: Collection[str] | None,
    removed: Collection[str],
    written: Collection[str] | None = None,
) -> Sources:
    """The sources of a map's output columns.

    A column the map wrote (new, or an overwritten parent column) depends on
    the columns it read; a parent column passed through depends on itself.
    ``written``: the columns the function returned, None when unknown; then a
    parent column kept may have been overwritten, and depends on the reads too.

    Example:
        >>> map_column_sources(["text", "label"], ["text", "label", "id"], ["label"], ())
        {'text': ('label', 'text'), 'label': ('label',), 'id': ('label',)}
    """
    read = _read(parent_columns, reads)
    kept = set(parent_columns) - set(removed)
    sources: Sources = {}
    for column in output_columns:
        if column not in kept:
            sources[column] = read
        elif written is not None and column not in written:
            sources[column] = (column,)
        elif written is not None:
            sources[column] = read
        else:
            sources[column] = tuple(sorted({column, *read}))
    return sources


def filter_column_sources(columns: Sequence[str], reads: Collection[str] | None) -> Sources:
    """The sources of a filter's columns: each itself and the columns the predicate read.

    Example:
        >>> filter_column_sources(["text", "label"], ["label"])
        {'text': ('label', 'text'), 'label': ('label',)}
    """
    read = _read(columns, reads)
    return {column: tuple(sorted({column, *read})) for column in columns}


def same_column_sources(columns: Sequence[str]) -> Sources:
    """Every column from itself: row operations (select, shuffle, sort) and casts.

    Example:
        >>> same_column_sources(["a"])
        {'a': ('a',)}
    """
    return {column: (column,) for column in columns}


def renamed_column_sources(columns: Sequence[str], mapping: Mapping[str, str]) -> Sources:
    """The sources of renamed columns: each new name from its old one (``columns``: the parent's).

    Example:
        >>> renamed_column_sources(["a", "b"], {"a": "x"})
        {'x': ('a',), 'b': ('b',)}
    """
    return {mapping.get(column, column): (column,) for column in columns}


def added_column_sources(columns: Sequence[str], added: str) -> Sources:
    """The parent's columns from themselves; ``added``, given as values, from none.

    Example:
        >>> added_column_sources(["a"], "b")
        {'a': ('a',), 'b': ()}
    """
    return {**same_column_sources(columns), added: ()}


def flattened_column_sources(parent_columns: Sequence[str], columns: Sequence[str]) -> Sources:
    """The sources of `flatten`'s columns: ``"a.b"`` from struct column ``"a"``.

    Example:
        >>> flattened_column_sources(["a", "c"], ["a.b", "a.d", "c"])
        {'a.b': ('a',), 'a.d': ('a',), 'c': ('c',)}
    """
    parents = set(parent_columns)
    sources: Sources = {}
    for column in columns:
        parent = column
        while parent not in parents and "." in parent:
            parent = parent.rsplit(".", 1)[0]
        sources[column] = (parent,) if parent in parents else tuple(parent_columns)
    return sources


def combined_column_sources(parents: Sequence[Sequence[str]], columns: Sequence[str]) -> Sources:
    """The sources of datasets combined (rows or columns): each column from every parent with it.

    Parent ``i``'s column is named as `LineageStep.source_name` says.

    Example:
        >>> combined_column_sources([["a"], ["a", "b"]], ["a", "b"])
        {'a': ('0:a', '1:a'), 'b': ('1:b',)}
    """
    return {
        column: tuple(
            LineageStep.source_name(index, column, len(parents))
            for index, names in enumerate(parents)
            if column in names
        )
        for column in columns
    }


def _read(columns: Sequence[str], reads: Collection[str] | None) -> tuple[str, ...]:
    return tuple(sorted(columns if reads is None else reads))

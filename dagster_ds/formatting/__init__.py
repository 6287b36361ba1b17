"""What users and their functions see and give back, shared by `Dataset` and `IterableDataset`.

Data stays in Arrow until a `Formatter` turns a table or record batch into what
the format asks for (Python objects, numpy arrays, an Arrow table, a pandas
DataFrame, torch tensors). What a map function returns is turned back into Arrow
by the functions of ``_outputs``, the same for map-style and streaming datasets.

Example:
    >>> import pyarrow as pa
    >>> from dagster_ds.formatting import Formatter
    >>> Formatter.create("numpy").batch(pa.table({"a": [1, 2]}))["a"].tolist()
    [1, 2]
"""

from dagster_ds.formatting._formatter import Formatter as Formatter

__all__ = ["Formatter"]

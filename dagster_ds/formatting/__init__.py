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

# Internal: for the other dagster_ds packages only; not public API.
from dagster_ds.formatting._calls import EXAMPLES_PER_CALL as EXAMPLES_PER_CALL
from dagster_ds.formatting._calls import FunctionCall as FunctionCall
from dagster_ds.formatting._calls import awaited_all as awaited_all
from dagster_ds.formatting._calls import returned_input as returned_input
from dagster_ds.formatting._feature_values import encode_results as encode_results
from dagster_ds.formatting._formatter import Formatter as Formatter
from dagster_ds.formatting._lazy_row import detach_rows as detach_rows
from dagster_ds.formatting._lazy_row import lazy_rows_of as lazy_rows_of
from dagster_ds.formatting._lazy_row import older_generations_held as older_generations_held
from dagster_ds.formatting._outputs import MixedValue as MixedValue
from dagster_ds.formatting._outputs import deleted_columns as deleted_columns
from dagster_ds.formatting._outputs import function_output as function_output
from dagster_ds.formatting._outputs import merge as merge
from dagster_ds.formatting._outputs import mixed_as_json as mixed_as_json
from dagster_ds.formatting._outputs import per_example_output as per_example_output
from dagster_ds.formatting._outputs import rows_to_batch as rows_to_batch
from dagster_ds.formatting._outputs import values_to_array as values_to_array
from dagster_ds.formatting._reads import ReadSet as ReadSet
from dagster_ds.formatting._reads import observed_reads as observed_reads
from dagster_ds.formatting._reads import union_reads as union_reads
from dagster_ds.formatting._tables import columns_of_rows as columns_of_rows
from dagster_ds.formatting._tables import table_of_columns as table_of_columns
from dagster_ds.formatting._tables import typed_table as typed_table

__all__ = ["Formatter"]

#: Names other dagster_ds packages import from here; not public API (may change).
__internal__ = [
    "EXAMPLES_PER_CALL",
    "FunctionCall",
    "MixedValue",
    "ReadSet",
    "awaited_all",
    "older_generations_held",
    "detach_rows",
    "lazy_rows_of",
    "columns_of_rows",
    "deleted_columns",
    "encode_results",
    "function_output",
    "merge",
    "mixed_as_json",
    "observed_reads",
    "per_example_output",
    "returned_input",
    "rows_to_batch",
    "table_of_columns",
    "typed_table",
    "union_reads",
    "values_to_array",
]

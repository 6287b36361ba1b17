"""The map-style Dataset: Arrow tables with fingerprints, transforms cached by fingerprint.

Example:
    >>> from dagster_ds.arrow import Dataset
    >>> ds = Dataset.from_dict({"text": ["a", "bb"]})
    >>> ds.filter(lambda x: len(x["text"]) > 1).num_rows
    1
"""

from dagster_ds.arrow._column import Column as Column
from dagster_ds.arrow._dataset import Dataset as Dataset
from dagster_ds.arrow._dict import DatasetDict as DatasetDict
from dagster_ds.arrow._info import DatasetInfo as DatasetInfo
from dagster_ds.arrow._info import NamedSplit as NamedSplit
from dagster_ds.arrow._info import Split as Split
from dagster_ds.fingerprint import LineageStep as LineageStep

__all__ = ["Column", "Dataset", "DatasetDict", "DatasetInfo", "LineageStep", "NamedSplit", "Split"]

"""dagster_ds: datasets-style transforms as fingerprinted, cached Dagster assets.

Importing this package is light: it imports neither dagster nor huggingface_hub.
Dagster integration lives in `dagster_ds.orchestration`. `DatasetDict` and
the streaming engine (`IterableDataset`, `concatenate_datasets`, `interleave_datasets`)
are imported at the first use of one of their names: a process that loads one split
and transforms it does not load them.
"""

import typing as _typing

from dagster_ds.arrow import Column as Column
from dagster_ds.arrow import Dataset as Dataset
from dagster_ds.arrow import DatasetInfo as DatasetInfo
from dagster_ds.arrow import NamedSplit as NamedSplit
from dagster_ds.arrow import Split as Split
from dagster_ds.errors import CastError as CastError
from dagster_ds.errors import ClassLabelError as ClassLabelError
from dagster_ds.errors import ColumnMismatchError as ColumnMismatchError
from dagster_ds.errors import ColumnNotFoundError as ColumnNotFoundError
from dagster_ds.errors import DagsterDsError as DagsterDsError
from dagster_ds.errors import DagsterDsWarning as DagsterDsWarning
from dagster_ds.errors import DataFilesNotFoundError as DataFilesNotFoundError
from dagster_ds.errors import DuplicateColumnError as DuplicateColumnError
from dagster_ds.errors import FeatureError as FeatureError
from dagster_ds.errors import HubAuthError as HubAuthError
from dagster_ds.errors import HubFeaturesMismatchError as HubFeaturesMismatchError
from dagster_ds.errors import HubRequestError as HubRequestError
from dagster_ds.errors import InvalidArgumentError as InvalidArgumentError
from dagster_ds.errors import InvalidFingerprintError as InvalidFingerprintError
from dagster_ds.errors import InvalidRepoIdError as InvalidRepoIdError
from dagster_ds.errors import MalformedFileError as MalformedFileError
from dagster_ds.errors import MissingExtraError as MissingExtraError
from dagster_ds.errors import NotASavedDatasetError as NotASavedDatasetError
from dagster_ds.errors import RepoNotFoundError as RepoNotFoundError
from dagster_ds.errors import RevisionNotFoundError as RevisionNotFoundError
from dagster_ds.errors import TransformOutputError as TransformOutputError
from dagster_ds.errors import UnhashableError as UnhashableError
from dagster_ds.errors import UnhashableTransformWarning as UnhashableTransformWarning
from dagster_ds.errors import UnsupportedFeatureWarning as UnsupportedFeatureWarning
from dagster_ds.exports import lazy_exports as _lazy_exports
from dagster_ds.features import Array2D as Array2D
from dagster_ds.features import Array3D as Array3D
from dagster_ds.features import Array4D as Array4D
from dagster_ds.features import Array5D as Array5D
from dagster_ds.features import Audio as Audio
from dagster_ds.features import ClassLabel as ClassLabel
from dagster_ds.features import Features as Features
from dagster_ds.features import Image as Image
from dagster_ds.features import Json as Json
from dagster_ds.features import LargeList as LargeList
from dagster_ds.features import List as List
from dagster_ds.features import Sequence as Sequence
from dagster_ds.features import Translation as Translation
from dagster_ds.features import TranslationVariableLanguages as TranslationVariableLanguages
from dagster_ds.features import Value as Value
from dagster_ds.fingerprint import Hasher as Hasher
from dagster_ds.fingerprint import explain as explain
from dagster_ds.fingerprint import generate_random_fingerprint as generate_random_fingerprint
from dagster_ds.fingerprint import update_fingerprint as update_fingerprint
from dagster_ds.load import load_dataset as load_dataset
from dagster_ds.load import load_from_disk as load_from_disk

if _typing.TYPE_CHECKING:
    from dagster_ds.arrow import DatasetDict as DatasetDict
    from dagster_ds.combine import concatenate_datasets as concatenate_datasets
    from dagster_ds.combine import interleave_datasets as interleave_datasets
    from dagster_ds.streaming import IterableDataset as IterableDataset
    from dagster_ds.streaming import IterableDatasetDict as IterableDatasetDict

__version__ = "0.1.0"

#: Public names imported at their first use, each from its module.
_LAZY = {
    "DatasetDict": "dagster_ds.arrow",
    "IterableDataset": "dagster_ds.streaming",
    "IterableDatasetDict": "dagster_ds.streaming",
    "concatenate_datasets": "dagster_ds.combine",
    "interleave_datasets": "dagster_ds.combine",
}

__all__ = [
    "Array2D",
    "Array3D",
    "Array4D",
    "Array5D",
    "Audio",
    "CastError",
    "ClassLabel",
    "ClassLabelError",
    "Column",
    "ColumnMismatchError",
    "ColumnNotFoundError",
    "DagsterDsError",
    "DagsterDsWarning",
    "DataFilesNotFoundError",
    "Dataset",
    "DatasetDict",
    "DatasetInfo",
    "DuplicateColumnError",
    "FeatureError",
    "Features",
    "Hasher",
    "HubAuthError",
    "HubFeaturesMismatchError",
    "HubRequestError",
    "Image",
    "InvalidArgumentError",
    "InvalidFingerprintError",
    "InvalidRepoIdError",
    "IterableDataset",
    "IterableDatasetDict",
    "Json",
    "LargeList",
    "List",
    "MalformedFileError",
    "MissingExtraError",
    "NamedSplit",
    "NotASavedDatasetError",
    "RepoNotFoundError",
    "RevisionNotFoundError",
    "Sequence",
    "Split",
    "TransformOutputError",
    "Translation",
    "TranslationVariableLanguages",
    "UnhashableError",
    "UnhashableTransformWarning",
    "UnsupportedFeatureWarning",
    "Value",
    "concatenate_datasets",
    "explain",
    "generate_random_fingerprint",
    "interleave_datasets",
    "load_dataset",
    "load_from_disk",
    "update_fingerprint",
]


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY)

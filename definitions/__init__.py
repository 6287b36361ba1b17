"""The example Dagster code location (``workspace.yaml`` loads ``defs`` from here)."""

import dagster as dg
import pyarrow as pa

from dagster_ds.fingerprint import Hasher, update_fingerprint
from definitions.demo import tokenize

SOURCE = pa.table({"text": ["The art of data", "A short one", "Fingerprints of the pipeline"]})


@dg.asset(code_version=Hasher.hash(tokenize))
def tokenized_fingerprint() -> dg.MaterializeResult:
    """The fingerprint the demo's tokenize transform gives the demo source."""
    fingerprint = update_fingerprint(Hasher.hash(SOURCE), "map", {"function": tokenize})
    return dg.MaterializeResult(
        data_version=dg.DataVersion(fingerprint),
        metadata={"dagster_ds/fingerprint": fingerprint},
    )


defs = dg.Definitions(assets=[tokenized_fingerprint])

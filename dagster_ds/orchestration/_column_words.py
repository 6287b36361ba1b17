"""An asset run says what it reused by read columns: metadata, ``dagster_ds/changed``, run log.

Each map or filter the asset function ran that found changed input shards
leaves a `ReuseNote` (see `dagster_ds.arrow.noting_column_reuse`); its sentence,
for example ``'n_chars' reads only 'text': reused 1 of 1 changed shards (20 in
all)``, is logged and added to the ``dagster_ds/changed`` text, and the shards
reused this way are counted in ``dagster_ds/shards_reused_by_columns``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dagster as dg

from dagster_ds.arrow import ReuseNote

REUSED_BY_COLUMNS = "dagster_ds/shards_reused_by_columns"


def say_column_reuse(
    context: dg.AssetExecutionContext,
    notes: Sequence[ReuseNote],
    metadata: dict[str, Any],
    changed_key: str,
) -> None:
    """Log ``notes`` and record them in ``metadata`` (count, and the ``changed_key`` text)."""
    metadata[REUSED_BY_COLUMNS] = dg.MetadataValue.int(sum(note.reused for note in notes))
    # A transform that reused nothing reran because what it read changed: the parents'
    # column sentences already say so, and a sentence per such transform is noise.
    sentences = [note.sentence() for note in notes if note.changed and note.reused]
    for sentence in sentences:
        context.log.info(sentence)
    if sentences:
        changed = metadata.get(changed_key)
        before = changed.value if isinstance(changed, dg.TextMetadataValue) else ""
        metadata[changed_key] = dg.MetadataValue.text(
            "; ".join([*filter(None, [before]), *sentences])
        )

"""The README's first command: an end-to-end walk through fingerprints.

It builds a small dataset, derives two transforms from it, shows that their
fingerprints are deterministic, and explains what changes when a transform's
helper changes. Later issues grow this into the Dagster example pipeline.
"""

from __future__ import annotations

import pyarrow as pa

from dagster_ds.fingerprint import Hasher, describe_transform, explain

STOPWORDS = {"the", "a", "of"}
MIN_LENGTH = 3


def clean(text: str) -> list[str]:
    return [word for word in text.lower().split() if word not in STOPWORDS]


def tokenize(example: dict[str, str]) -> dict[str, list[str]]:
    return {"tokens": clean(example["text"])}


def long_enough(example: dict[str, list[str]]) -> bool:
    return len(example["tokens"]) >= MIN_LENGTH


def main() -> None:
    global MIN_LENGTH
    source = pa.table({"text": ["The art of data", "A short one", "Fingerprints of the pipeline"]})
    source_fp = Hasher.hash(source)
    tokenized = describe_transform(source_fp, "map", {"function": tokenize, "batched": False})
    filtered = describe_transform(tokenized.digest, "filter", {"function": long_enough})
    print(f"source     {source_fp}")
    print(f"map        {tokenized.digest}")
    print(f"filter     {filtered.digest}")

    rechunked = pa.Table.from_batches(source.to_batches(max_chunksize=1))
    assert Hasher.hash(rechunked) == source_fp, "chunking must not change a fingerprint"
    print("rechunked source: same fingerprint")

    MIN_LENGTH = 4
    changed = describe_transform(tokenized.digest, "filter", {"function": long_enough})
    print("\nAfter MIN_LENGTH = 4, the filter's fingerprint changes, and why:")
    print(explain(filtered, changed))


if __name__ == "__main__":
    main()

"""Streaming never imports torch (or the anchor) unless the user did."""

from __future__ import annotations

from tests.conftest import RunPython


def test_iterating_every_format_but_torch_does_not_import_torch(run_python: RunPython) -> None:
    loaded = run_python(
        """
        import sys
        from dagster_ds import IterableDataset, interleave_datasets
        ds = IterableDataset.from_dict({"a": list(range(100))}, num_shards=4)
        ds = interleave_datasets([ds.shuffle(seed=0), ds.map(lambda x: {"a": x["a"] + 1})])
        for kind in (None, "numpy", "arrow", "pandas"):
            list(ds.with_format(kind).take(5))
            list(ds.with_format(kind).iter(batch_size=7))
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "datasets")))
        """,
        cold=True,
    )
    assert loaded == "[]"

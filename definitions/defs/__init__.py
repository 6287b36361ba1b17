"""The example's `dg` defs folder: component definitions (``defs.yaml``) added with ``dg``.

``dg scaffold defs dagster_ds.orchestration.components.DatasetPipelineComponent NAME``
adds a declared dataset pipeline here; `definitions` loads this folder next to the
Python pipeline, so ``dg dev`` and ``dagster dev -w workspace.yaml`` show both.
"""

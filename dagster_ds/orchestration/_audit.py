"""Write, audit, publish: a dataset asset's checks run on its candidate before any Hub push.

The candidate is stored first (write); the asset's `dataset_check`s run on it in
the same step (audit); it is pushed only when every blocking check passed
(publish). A blocking check declared apart from the asset (``@dg.asset_check``,
`schema_check`) runs in a later step, after the push would be made: while one
exists the push is withheld too, and the run log says to declare it with
``dataset_asset(checks=...)`` or to publish with `publish_to_hub`, which
Dagster runs after blocking checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from dagster_ds.orchestration.checks import DatasetCheck
from dagster_ds.orchestration.metadata import DatasetMetadataKey

__all__ = ["Audit", "audit_candidate"]


@dataclass(frozen=True)
class Audit:
    """The checks run on a candidate, and what they say about publishing it.

    Attributes:
        results: The result of each selected check, to yield after the output.
        failed: The blocking checks that failed.
        later: Blocking checks of the asset that run after its step (declared apart).
    """

    results: tuple[dg.AssetCheckResult, ...] = ()
    failed: tuple[str, ...] = ()
    later: tuple[str, ...] = ()

    @property
    def may_publish(self) -> bool:
        """Whether the candidate may be pushed: no blocking check failed or is still to run."""
        return not self.failed and not self.later

    def withheld(self, data_version: str) -> dict[str, Any]:
        """The metadata of a push withheld, saying why."""
        return {DatasetMetadataKey.HUB_PUSH.value: f"withheld: {self.reason(data_version)}"}

    def reason(self, data_version: str) -> str:
        """Why the candidate ``data_version`` was not pushed, in words."""
        if self.failed:
            names = ", ".join(repr(name) for name in self.failed)
            return (
                f"blocking check {names} failed on candidate {data_version[:12]}…; the Hub is"
                " untouched"
            )
        names = ", ".join(repr(name) for name in self.later)
        return (
            f"blocking check {names} runs after this step, so the candidate"
            f" {data_version[:12]}… is not pushed before it; the Hub is untouched. Give the"
            " check to dataset_asset(checks=[dataset_check(...)]) to run it before the push,"
            " or push with publish_to_hub, which runs after blocking checks"
        )


def audit_candidate(
    checks: Sequence[DatasetCheck], context: dg.AssetExecutionContext, candidate: Any
) -> Audit:
    """Run the selected ``checks`` on ``candidate``; find the blocking checks declared apart."""
    key = context.asset_key
    selected = context.selected_asset_check_keys
    results: list[dg.AssetCheckResult] = []
    failed: list[str] = []
    for check in checks:
        if dg.AssetCheckKey(key, check.name) not in selected:
            continue
        result = check.evaluate(key, candidate)
        results.append(result)
        if check.blocking and not result.passed:
            failed.append(check.name)
    own = {check.name for check in checks}
    graph = context.job_def.asset_layer.asset_graph  # the job's assets and checks
    later = sorted(
        check_key.name
        for check_key in graph.asset_check_keys
        if check_key.asset_key == key
        and check_key.name not in own
        and graph.get_check_spec(check_key).blocking
    )
    return Audit(tuple(results), tuple(failed), tuple(later))

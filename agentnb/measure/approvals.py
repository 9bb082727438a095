"""Approvals of a run as a table, and the time spent waiting for them.

A person's think time is not latency of the system: the runtime records every approval as an
``approval`` span and log event with ``wait_s``. This table lists them, and `approval_wait`
gives the total, so a latency figure can subtract it (``wall - approval_wait(result)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = ["run_id", "path", "agent", "tool", "approved", "reason", "wait_s"]


def approvals(result: Any) -> pd.DataFrame:
    """One row per call that asked for approval: where, which sub-agent, the decision, the wait.

    Calls a ``needs_approval`` callable let through are not listed (nobody was asked).
    """
    import pandas as pd

    rows = [
        {
            "run_id": e["run"],
            "path": e["path"],
            "agent": e.get("agent"),
            "tool": e.get("tool"),
            "approved": e.get("approved"),
            "reason": e.get("reason"),
            "wait_s": e.get("wait_s"),
        }
        for e in result.trace.records
        if e["event"] == "approval"
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def approval_wait(result: Any) -> float:
    """Seconds the run spent waiting for approvals (summed; parallel waits each count)."""
    return float(
        sum(e.get("wait_s") or 0.0 for e in result.trace.records if e["event"] == "approval")
    )

"""``agentnb.plot``: figures of the measurements, each returned as a matplotlib `Figure`.

Imported on first use (``agentnb.plot.multiplier(...)``), so ``import agentnb`` does not
load matplotlib. The functions live in `agentnb.measure.plot`.
"""

from .measure.frontier import pareto
from .measure.plot import (
    COMPONENT_LABELS,
    config_labels,
    cost_breakdown,
    latency,
    multiplier,
    timeline,
    tool_specs,
    verifier_rounds,
)

__all__ = [
    "COMPONENT_LABELS",
    "config_labels",
    "cost_breakdown",
    "latency",
    "multiplier",
    "pareto",
    "timeline",
    "tool_specs",
    "verifier_rounds",
]

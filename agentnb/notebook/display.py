"""Rich display of runs in a notebook: the renderers of `agentnb.trace.render`, re-exported.

The HTML and text are pure strings built in the trace layer, so a `RunResult` renders itself
without loading IPython; this module keeps the notebook layer's names for them.
"""

from __future__ import annotations

from ..trace.render import (
    LATENCY_REGEX,
    SANITIZE_RULES,
    cost_html,
    cost_lines,
    cost_rows,
    fanout_html,
    fanout_text,
    result_html,
    result_text,
    tree_html,
    tree_lines,
)

__all__ = [
    "LATENCY_REGEX",
    "SANITIZE_RULES",
    "cost_html",
    "cost_lines",
    "cost_rows",
    "fanout_html",
    "fanout_text",
    "result_html",
    "result_text",
    "tree_html",
    "tree_lines",
]

"""The notebook layer: ``%%agent`` magics, live widgets and rich display of runs.

Everything a magic does is a plain function here too (`define_agent`, `run_live`,
`interpolate`); the widgets work in any Jupyter front end that has ipywidgets 8.
"""

# Loading approval_widget installs the default approver; loading hints shortens a newcomer's
# mistakes in the running shell's cells.
from . import approval_widget, hints  # noqa: F401
from .commands import agent_timeout, define_agent, interpolate, run_live, strip_directives
from .dashboard import SweepDashboard
from .display import (
    LATENCY_REGEX,
    SANITIZE_RULES,
    fanout_html,
    fanout_text,
    result_html,
    result_text,
)
from .explorer import TraceExplorer
from .magics import AgentMagics, load_ipython_extension
from .monitor import RunMonitor

__all__ = [
    "LATENCY_REGEX",
    "SANITIZE_RULES",
    "AgentMagics",
    "RunMonitor",
    "SweepDashboard",
    "TraceExplorer",
    "agent_timeout",
    "define_agent",
    "fanout_html",
    "fanout_text",
    "interpolate",
    "load_ipython_extension",
    "result_html",
    "result_text",
    "run_live",
    "strip_directives",
]

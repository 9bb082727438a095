"""The runtime layer: agents, tools, the run loop, agents as tools, handoffs and patterns."""

from ._loop import run_sync
from .agent import Agent
from .agent_tool import AgentTool
from .context import Limits, RunContext
from .handoffs import Handoff, HandoffConfig
from .prompt import PromptSection, assemble_prompt
from .result import RunResult
from .runner import run
from .team import TeamTool, team
from .tools import Tool, ToolCallContext, tool
from .transfer import Transfer

__all__ = [
    "Agent",
    "AgentTool",
    "Handoff",
    "HandoffConfig",
    "Limits",
    "PromptSection",
    "RunContext",
    "RunResult",
    "TeamTool",
    "Tool",
    "ToolCallContext",
    "Transfer",
    "assemble_prompt",
    "run",
    "run_sync",
    "team",
    "tool",
]

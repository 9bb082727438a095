"""The runtime layer: agents, tools, the run loop, agents as tools, handoffs and patterns."""

from ._loop import main_thread_blocked, run_sync
from .agent import Agent
from .agent_tool import AgentTool
from .context import Limits, RunContext
from .handoffs import Handoff, HandoffConfig
from .options import RunOptions
from .prompt import PromptSection, assemble_prompt
from .result import RunResult
from .runner import run
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
    "RunOptions",
    "RunResult",
    "Tool",
    "ToolCallContext",
    "Transfer",
    "assemble_prompt",
    "main_thread_blocked",
    "run",
    "run_sync",
    "tool",
]

"""The runtime layer: agents, tools, the run loop, agents as tools, handoffs and patterns."""

from ._loop import main_thread_blocked, run_sync
from .agent import Agent
from .agent_tool import AgentTool
from .context import Limits, RunContext
from .events import (
    AgentEnded,
    AgentStarted,
    Event,
    HandoffEvent,
    LogRecorded,
    MessageOutput,
    PartialOutput,
    RunEnded,
    SpanEnded,
    SpanStarted,
    TextDelta,
    ToolCallDelta,
    ToolCallEnded,
    ToolCallStarted,
)
from .handoffs import Handoff, HandoffConfig
from .hooks import Hooks
from .options import RunOptions
from .outcome import ToolOutcome
from .pause import Interruption, resume
from .prompt import PromptSection, assemble_prompt
from .result import RunResult
from .runner import run
from .streaming import RunStream, run_streamed, stream_sync
from .team import TeamTool, team
from .tool_context import ToolCallContext
from .tools import Tool, tool
from .transfer import Transfer

__all__ = [
    "Agent",
    "AgentEnded",
    "AgentStarted",
    "Event",
    "AgentTool",
    "Handoff",
    "HandoffConfig",
    "HandoffEvent",
    "LogRecorded",
    "Hooks",
    "Interruption",
    "MessageOutput",
    "PartialOutput",
    "Limits",
    "PromptSection",
    "RunContext",
    "RunOptions",
    "RunEnded",
    "RunResult",
    "TeamTool",
    "RunStream",
    "SpanEnded",
    "SpanStarted",
    "TextDelta",
    "Tool",
    "ToolCallContext",
    "ToolCallDelta",
    "ToolCallEnded",
    "ToolCallStarted",
    "ToolOutcome",
    "Transfer",
    "assemble_prompt",
    "main_thread_blocked",
    "resume",
    "run",
    "run_streamed",
    "run_sync",
    "team",
    "stream_sync",
    "tool",
]

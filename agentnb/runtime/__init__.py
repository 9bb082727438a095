"""The runtime layer: agents, tools, the run loop, agents as tools, handoffs and patterns."""

from .agents.agent import Agent
from .agents.prompt import PromptSection, assemble_prompt
from .handoffs.handoff import Handoff, HandoffConfig
from .handoffs.transfer import Transfer
from .loop._sync import main_thread_blocked, run_sync
from .loop.context import Limits, RunContext
from .loop.options import RunOptions
from .loop.outcome import ToolOutcome
from .loop.pause import Interruption, resume
from .loop.result import RunResult
from .loop.run_state import RunState
from .loop.runner import run
from .tools.agent_tool import AgentTool
from .tools.context import ToolCallContext
from .tools.function import Tool, tool
from .tools.team import TeamTool, team
from .watch.events import (
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
from .watch.hooks import Hooks
from .watch.streaming import RunStream, run_streamed, stream_sync

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
    "RunState",
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

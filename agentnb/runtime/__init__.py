"""The runtime layer: agents, tools, the run loop, agents as tools, handoffs and patterns."""

from .agents.agent import Agent
from .agents.prompt import PromptSection, assemble_prompt
from .data.approvals import Interruption
from .data.context import Limits, RunContext
from .data.events import (
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
from .data.hooks import Hooks
from .data.options import RunOptions
from .data.outcome import ToolOutcome
from .data.result import RunResult
from .data.run_state import RunState
from .data.session import Session
from .data.transfer import Transfer
from .engine.agent_tool import AgentTool
from .engine.blocking import main_thread_blocked, run_sync
from .engine.resume import resume
from .engine.runner import run
from .engine.streaming import RunStream, run_streamed, stream_sync
from .engine.teams import TeamTool, team
from .handoffs.handoff import Handoff, HandoffConfig
from .tools.context import ToolCallContext
from .tools.function import Tool, tool

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
    "Session",
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

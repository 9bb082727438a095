"""The runtime layer: agents, tools, the run loop, agents as tools, handoffs and patterns.

This module is the layer's one face: the layers above import the runtime only from here
(import-linter checks it). ``__all__`` is the public API; the names imported as ``name as name``
and not listed in it are what patterns, measure and the notebook layer build on (agentnb does
not re-export them).
"""

from .agents.agent import Agent
from .agents.agent import model_client as model_client
from .agents.output import output_spec as output_spec
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
from .data.memory import SummarizeOlder
from .data.options import RunKeywords as RunKeywords
from .data.options import RunOptions
from .data.options import shows_run_keywords as shows_run_keywords
from .data.outcome import ToolOutcome
from .data.outcome import to_text as to_text
from .data.result import RunResult
from .data.run_state import RunState
from .data.session import Session
from .data.state import AgentRun as AgentRun
from .data.transfer import Transfer
from .engine.blocking import main_thread_blocked, run_sync
from .engine.resume import resume
from .engine.runner import check_input as check_input
from .engine.runner import execute as execute
from .engine.runner import run
from .engine.runner import start_context as start_context
from .engine.streaming import RunStream, run_streamed, stream_sync
from .engine.teams import TeamTool, team
from .guards.approval import Approval as Approval
from .guards.approval import Approver as Approver
from .guards.approval import PendingCall as PendingCall
from .guards.approval import in_notebook as in_notebook
from .guards.approval import set_default_approver as set_default_approver
from .handoffs.handoff import Handoff, HandoffConfig
from .handoffs.handoff import intent_message as intent_message
from .handoffs.handoff import user_message as user_message
from .tools.agent_tool import AgentTool
from .tools.context import ToolCallContext
from .tools.function import BaseTool as BaseTool
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
    "SummarizeOlder",
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

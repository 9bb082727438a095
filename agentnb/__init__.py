"""agentnb: build, run and measure hierarchical agent systems in Jupyter.

An orchestrator keeps control and calls sub-agents exposed as tools; every model call is
traced with what it was sent, so cost and latency become pandas tables and figures.
"""

# Imports sorted by module (as ruff keeps them); __all__ below lists the names layer by layer.

import inspect

from . import _aliases, filters  # noqa: F401  (_aliases: old module paths import, see its docstring)
from .errors import (
    AgentnbError,
    AgentnbWarning,
    AgentRunError,
    BudgetExceeded,
    GuardrailTripped,
    MaxTurnsExceeded,
    ModelBehaviorError,
    ModelHTTPError,
    ModelRetry,
    NoApprover,
    OutputValidationError,
    ReplayMismatch,
    RunCancelled,
    RunPaused,
    RunTimeout,
    ScriptExhausted,
    StreamBroken,
    ToolFailed,
    UnreadableReply,
    UserError,
)
from .measure import scenarios
from .measure.caching import cache_estimate
from .measure.conversation import conversation_cost
from .measure.critical import critical_path
from .measure.experiments.runs import experiment
from .measure.experiments.stored import Experiment, compare, open_experiment
from .measure.frontier import pareto
from .measure.prices import (
    Price,
    Prices,
    add_cost,
)
from .measure.rounds import verifier_table
from .measure.sections import section_costs
from .measure.sweeps import sweep
from .measure.tables import (
    breakdown,
    breakdown_growth,
    cost_fit,
    cost_table,
    latency_series,
)
from .measure.tool_sources import tool_sources
from .models import (
    Backoff,
    FunctionModel,
    Message,
    ModelClient,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    Say,
    ScriptedModel,
    TestModel,
    ToolCall,
    ToolChoices,
    ToolSpec,
    Usage,
    say,
    tool_call,
)
from .models.deltas import TextChunk, ToolCallChunk
from .models.local_server.model import LocalModel, local_model
from .models.providers.anthropic.adapter import AnthropicModel
from .models.providers.openai.adapter import OpenAIModel
from .models.providers.openai_responses.adapter import HostedTool, OpenAIResponsesModel
from .models.recorded.recorder import Recorder, Replay, record, replay
from .models.types import messages_from_json, messages_to_json
from .patterns import (
    ChainResult,
    FanOut,
    HandoffRoute,
    Intent,
    Judgement,
    JudgeVerdict,
    Respond,
    Round,
    Topology,
    Verification,
    VerifyResult,
    Vote,
    chain,
    harshest,
    hierarchy,
    judge,
    majority,
    mesh,
    parallel,
    pipeline,
    star,
    verify_loop,
)
from .runtime import (
    Agent,
    AgentEnded,
    AgentStarted,
    AgentTool,
    Event,
    Handoff,
    HandoffConfig,
    HandoffEvent,
    Hooks,
    Limits,
    LogRecorded,
    MessageOutput,
    PartialOutput,
    PromptSection,
    RunContext,
    RunEnded,
    RunOptions,
    RunResult,
    RunState,
    RunStream,
    Session,
    SpanEnded,
    SpanStarted,
    SummarizeOlder,
    TeamTool,
    TextDelta,
    Tool,
    ToolCallContext,
    ToolCallDelta,
    ToolCallEnded,
    ToolCallStarted,
    ToolOutcome,
    assemble_prompt,
    resume,
    run,
    run_streamed,
    run_sync,
    stream_sync,
    team,
    tool,
)
from .runtime.agents.settings import FunctionToolResult, StopAtTools, ToolsToFinalOutputResult
from .runtime.data.approvals import ApprovalRecord, Interruption
from .runtime.data.result import AgentSummary
from .runtime.data.transfer import Transfer
from .runtime.guards.approval import (
    Approval,
    PendingCall,
    approve_all,
    reject_all,
)
from .runtime.guards.approval import in_notebook as _in_notebook
from .runtime.guards.guardrails import (
    Guardrail,
    GuardrailResult,
    agent_guardrail,
    input_guardrail,
    output_guardrail,
)
from .runtime.guards.tool_guardrails import ToolGuardrail
from .runtime.handoffs.handoff import HandoffTool
from .runtime.tools.function import BaseTool
from .trace import (
    CALL_COLUMNS,
    canonical_request,
    request_sizes,
    set_tokenizer,
)
from .trace.spans import Span

__version__ = "0.1.0"

if _in_notebook():  # in a kernel, load the notebook layer: it installs the approval widget
    from . import notebook as _notebook  # noqa: F401

_NOTEBOOK = ("RunMonitor", "SweepDashboard", "TraceExplorer", "define_agent", "run_live")


def __getattr__(name: str) -> object:
    # agentnb.plot loads matplotlib: imported on first use so that `import agentnb` stays light.
    if name in ("plot", "mcp"):  # agentnb.mcp: MCP servers' tools (the SDK loads when used)
        import importlib

        return importlib.import_module(f".{name}", __name__)
    if name in _NOTEBOOK:  # the notebook layer loads IPython and ipywidgets: on first use too
        from . import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'agentnb' has no attribute {name!r}")


def _own_public_names() -> None:
    """Each public class and function reports ``agentnb`` as its module (httpx's habit): `help`
    and reprs show the API rather than the file it is filed in, and a pickle names
    ``agentnb.RunResult``, which survives the next move of a file."""
    for name in __all__:
        value = globals().get(name)
        if (isinstance(value, type) or inspect.isfunction(value)) and value.__module__.startswith(
            __name__ + "."
        ):
            value.__module__ = __name__


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext agentnb``: register the magics."""
    from .notebook.magics import load_ipython_extension as load

    load(ipython)


__all__ = [
    # errors
    "AgentnbError",
    "AgentnbWarning",
    "AgentRunError",
    "BudgetExceeded",
    "GuardrailTripped",
    "MaxTurnsExceeded",
    "ModelBehaviorError",
    "ModelHTTPError",
    "ModelRetry",
    "NoApprover",
    "OutputValidationError",
    "ReplayMismatch",
    "RunCancelled",
    "RunPaused",
    "RunTimeout",
    "ScriptExhausted",
    "StreamBroken",
    "ToolFailed",
    "UnreadableReply",
    "UserError",
    # models
    "AnthropicModel",
    "FunctionModel",
    "HostedTool",
    "LocalModel",
    "Message",
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "Backoff",
    "Say",
    "ToolChoices",
    "TextChunk",
    "ToolCallChunk",
    "Recorder",
    "Replay",
    "OpenAIModel",
    "OpenAIResponsesModel",
    "ScriptedModel",
    "TestModel",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "local_model",
    "record",
    "replay",
    "say",
    "tool_call",
    # trace
    "CALL_COLUMNS",
    "canonical_request",
    "request_sizes",
    "set_tokenizer",
    # runtime
    "Agent",
    "AgentTool",
    "Approval",
    "ApprovalRecord",
    "Guardrail",
    "GuardrailResult",
    "Handoff",
    "HandoffConfig",
    "Hooks",
    "Limits",
    "PendingCall",
    "PromptSection",
    "RunContext",
    "RunOptions",
    "Session",
    "SummarizeOlder",
    "RunResult",
    "RunState",
    "StopAtTools",
    "FunctionToolResult",
    "ToolsToFinalOutputResult",
    "TeamTool",
    "Tool",
    "ToolCallContext",
    "ToolGuardrail",
    "ToolOutcome",
    "agent_guardrail",
    "approve_all",
    "assemble_prompt",
    "input_guardrail",
    "output_guardrail",
    "reject_all",
    "resume",
    "run",
    "run_sync",
    "team",
    "tool",
    # runtime: streaming
    "AgentEnded",
    "AgentStarted",
    "Event",
    "HandoffEvent",
    "LogRecorded",
    "MessageOutput",
    "PartialOutput",
    "RunEnded",
    "RunStream",
    "SpanEnded",
    "SpanStarted",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallEnded",
    "ToolCallStarted",
    "run_streamed",
    "stream_sync",
    # patterns (orchestration in code)
    "ChainResult",
    "FanOut",
    "HandoffRoute",
    "Intent",
    "JudgeVerdict",
    "Judgement",
    "Respond",
    "Round",
    "Topology",
    "Verification",
    "VerifyResult",
    "Vote",
    "chain",
    "filters",
    "harshest",
    "hierarchy",
    "judge",
    "majority",
    "mesh",
    "parallel",
    "pipeline",
    "star",
    "verify_loop",
    # types that public signatures and result fields use
    "AgentSummary",
    "BaseTool",
    "HandoffTool",
    "Interruption",
    "Span",
    "Transfer",
    # measure
    "Experiment",
    "Price",
    "Prices",
    "add_cost",
    "breakdown",
    "breakdown_growth",
    "cache_estimate",
    "conversation_cost",
    "compare",
    "cost_fit",
    "cost_table",
    "critical_path",
    "experiment",
    "latency_series",
    "open_experiment",
    "pareto",
    "plot",
    "mcp",
    "messages_from_json",
    "messages_to_json",
    "scenarios",
    "section_costs",
    "tool_sources",
    "sweep",
    "verifier_table",
    # notebook (imported on first use)
    "RunMonitor",
    "SweepDashboard",
    "TraceExplorer",
    "define_agent",
    "run_live",
]

_own_public_names()

"""Per-agent run behaviour: the model settings a turn sends, and when a tool's result ends a run.

`ModelSettings` themselves live with the models (they travel in `ModelRequest.settings`);
this module decides which settings a turn of an agent sends: the agent's, overridden field by
field by the run's, and ``tool_choice`` back to ``"auto"`` once a forced tool call was made.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Union

from ...errors import UserError
from ...models.settings import ModelSettings
from ..data.callbacks import check_callable

if TYPE_CHECKING:
    from ...models.types import ToolCall
    from ..data.context import RunContext
    from ..tools.function import BaseTool


@dataclass(frozen=True, init=False)
class StopAtTools:
    """``tool_use_behavior=StopAtTools("lookup", ...)``: a call of one of these tools ends the
    agent's run, the tool's result becoming its output (no further model call).

    A call that fails (the tool raises, its arguments are not valid, no tool has that name)
    has no result to give: the run ends ``ok=False`` with `agentnb.errors.ToolFailed`, never
    with the error text as its answer."""

    names: tuple[str, ...]

    def __init__(self, *names: str) -> None:
        if not names or not all(isinstance(n, str) and n for n in names):
            raise UserError(f"StopAtTools needs one or more tool names, got {names!r}")
        object.__setattr__(self, "names", tuple(names))


@dataclass(frozen=True, slots=True)
class FunctionToolResult:
    """One tool call of a turn, as a ``tool_use_behavior`` function reads it."""

    tool: BaseTool | None
    """The tool called (None: the model named a tool the agent does not have)."""
    call: ToolCall
    output: str
    """The result as the model would read it (an error starts with ``ERROR: ``)."""
    ok: bool = True
    """Whether the call succeeded (its span ended ``ok``)."""


@dataclass(frozen=True, slots=True)
class ToolsToFinalOutputResult:
    """What a ``tool_use_behavior`` function decides: whether ``final_output`` is the agent's
    output (no further model call), as in openai-agents."""

    is_final_output: bool
    final_output: Any = None
    """The output (validated against the agent's ``output_type`` when it is text)."""


ToolsToFinalOutputFunction = Callable[
    ..., Union[ToolsToFinalOutputResult, Awaitable[ToolsToFinalOutputResult]]  # noqa: UP007
]
"""``fn(ctx, results) -> ToolsToFinalOutputResult`` (sync or async): openai-agents' signature,
``ctx`` being the `RunContext` (``ctx.deps``, ``ctx.usage``), ``results`` the turn's
`FunctionToolResult` list."""

ToolUseBehavior = Union[  # noqa: UP007
    Literal["run_llm_again", "stop_on_first_tool"], StopAtTools, ToolsToFinalOutputFunction
]
"""What happens after an agent's tools ran: ask the model again (the default), stop, or let a
function decide."""

BEHAVIORS = ("run_llm_again", "stop_on_first_tool")


def check_behavior(value: Any, agent: str) -> None:
    """A `UserError` unless ``value`` is a tool-use behaviour."""
    if isinstance(value, StopAtTools) or (isinstance(value, str) and value in BEHAVIORS):
        return
    if callable(value):
        check_callable(value, f"Agent({agent!r}, tool_use_behavior=...)", ("ctx", "results"))
        return
    raise UserError(
        f"Agent {agent!r}: tool_use_behavior must be 'run_llm_again', 'stop_on_first_tool', "
        f"agentnb.StopAtTools('tool_name', ...) or a function fn(ctx, results), got {value!r}"
    )


async def decided(
    behavior: ToolsToFinalOutputFunction, ctx: RunContext, results: list[FunctionToolResult]
) -> ToolsToFinalOutputResult:
    """What a ``tool_use_behavior`` function decided (awaited when it is async)."""
    verdict = behavior(ctx, results)
    if inspect.isawaitable(verdict):
        verdict = await verdict
    if not isinstance(verdict, ToolsToFinalOutputResult):
        raise UserError(
            "tool_use_behavior=fn(ctx, results) must return "
            f"agentnb.ToolsToFinalOutputResult(is_final_output, final_output), got {verdict!r}"
        )
    return verdict


def stopping_call(behavior: Any, calls: list[ToolCall]) -> int | None:
    """The index of the call whose result ends the agent's run, or None to ask the model again.

    (A handoff's transfer call never gets here: control has moved on before.)"""
    if behavior == "run_llm_again" or callable(behavior):
        return None
    for i, call in enumerate(calls):
        if behavior == "stop_on_first_tool" or call.name in behavior.names:
            return i
    return None


def turn_settings(
    agent_settings: ModelSettings | None, run_settings: ModelSettings | None
) -> ModelSettings | None:
    """The settings an agent's calls send: its own, with the run's fields on top."""
    if run_settings is None:
        return agent_settings
    if agent_settings is None:
        return run_settings
    return agent_settings.merged(run_settings)


def after_tool_calls(settings: ModelSettings | None) -> ModelSettings | None:
    """The settings of the turn after one that called tools: a forced tool choice becomes
    ``"auto"``, so an agent made to call a tool is not made to call it forever."""
    if settings is not None and settings.forces_tool:
        return replace(settings, tool_choice="auto")
    return settings

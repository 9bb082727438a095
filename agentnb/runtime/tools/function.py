"""Function tools: a Python function becomes a tool whose JSON schema comes from its signature.

Errors never escape a tool call: a tool that raises, an unknown tool name, arguments that are
not JSON or do not fit the schema all end in a `ToolOutcome` of kind ``error``, which the model
reads as text, and the run goes on. The model's JSON arguments are read once per call
(`read_arguments`, by the run loop); tool guardrails and the tool share that dict.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import sys
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict, Unpack

from pydantic import BaseModel, PydanticUserError, ValidationError
from pydantic_core import from_json

from ... import checks
from ...errors import AgentnbWarning, CallbackRaised, UserError
from ...models.types import ToolSpec
from ..data.callbacks import check_callable
from ..data.events import being_cancelled
from ..data.outcome import ToolOutcome
from ..data.outcome import to_text as to_text
from ..data.transfer import Transfer
from .context import ToolCallContext
from .schema import arguments_model, clean_schema, parse_docstring

if TYPE_CHECKING:
    from ..agents.agent import Agent
    from ..data.context import RunContext

DEFAULT_MAX_RESULT_CHARS = 20_000
APPROVAL_FORMS = (("ctx", "arguments"), ("pending",))
"""How a ``needs_approval`` callable is called: ``fn(ctx, arguments)`` or ``fn(pending)``."""


@dataclass(eq=False)
class BaseTool(ABC):
    """What the run loop needs of a tool: a name, a spec for the model, and `invoke`.

    `Tool` (a function), `AgentTool` (an agent) and the handoff tools are its kinds. Whatever
    goes wrong inside `invoke` comes back as text for the model, except what ends the run.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    """The JSON schema of the arguments."""
    input_guardrails: tuple[Callable[..., Any], ...] = field(default=(), kw_only=True)
    """``fn(ctx, tool_name, arguments) -> ToolGuardrail``: see `agentnb.runtime.guards.tool_guardrails`."""
    output_guardrails: tuple[Callable[..., Any], ...] = field(default=(), kw_only=True)
    """``fn(ctx, tool_name, arguments, clip_result) -> ToolGuardrail``."""
    needs_approval: Any = field(default=False, kw_only=True)
    """``True`` or ``fn(ctx, arguments) -> bool`` (sync or async): ask the run's approver first."""
    is_enabled: Any = field(default=True, kw_only=True)
    """``True``, ``False`` or ``fn(ctx, agent) -> bool`` (sync or async), asked each time the
    agent starts: a tool not enabled is not offered (see `agentnb.runtime.tools.enabled`)."""
    _spec: ToolSpec | None = field(default=None, init=False, repr=False, compare=False)

    approval_here: ClassVar[bool] = True
    """Whether the checks around a call ask for approval (an `AgentTool` asks in its own
    invoke, after its depth and recursion guards)."""

    @property
    def checked(self) -> bool:
        """Whether a call goes through `tool_guardrails.invoke_checked` rather than `invoke`."""
        return bool(
            self.input_guardrails
            or self.output_guardrails
            or (self.needs_approval and self.approval_here)
        )

    @property
    def spec(self) -> ToolSpec:
        """What the model is told about this tool."""
        if self._spec is None:
            self._spec = ToolSpec(self.name, self.description, self.parameters)
        return self._spec

    def spec_for(self, ctx: RunContext) -> ToolSpec:
        """What the model is told about this tool in the run ``ctx``: `spec`, except for a
        sub-agent's tool, whose document handles are the run's (see `.handles`)."""
        return self.spec

    def sub_agents(self) -> tuple[tuple[str | None, Agent], ...]:
        """The agents a call of this tool may run, each with the team member name that picks
        it (None for a tool that runs one agent); empty for a plain tool. `Agent.graph` and the
        topologies read this."""
        return ()

    @abstractmethod
    async def invoke(self, arguments: dict[str, Any], ctx: ToolCallContext) -> ToolOutcome:
        """Run the tool on the model's arguments (read from its JSON by `read_arguments`; the
        raw text is ``ctx.arguments``) and say how the call ended."""


@dataclass(eq=False)
class Tool(BaseTool):
    """A Python function the model can ask for, with its argument validation."""

    fn: Callable[..., Any]
    args_model: type[BaseModel] | None = None
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS
    """The longest result handed back to the model; longer ones are cut, with a note."""
    context_param: str | None = None
    """The parameter that receives the `ToolCallContext`, if the function asks for it."""
    _async: tuple[Callable[..., Any], bool] | None = field(default=None, repr=False)
    """``(fn, inspect.iscoroutinefunction(fn))``, asked once per function, not once per call."""

    async def invoke(self, arguments: dict[str, Any], ctx: ToolCallContext) -> ToolOutcome:
        """Validate the arguments against the signature and run the function."""
        if self.args_model is None:
            kwargs = dict(arguments)
        else:
            validated = validate_arguments(self.args_model, self.name, arguments)
            if isinstance(validated, ToolOutcome):
                return validated
            # __pydantic_fields__ is what model_fields returns, without its descriptor's cost
            kwargs = {k: getattr(validated, k) for k in type(validated).__pydantic_fields__}
        if self.context_param:
            kwargs[self.context_param] = ctx
        return await self.call(kwargs)

    async def call(self, kwargs: dict[str, Any]) -> ToolOutcome:
        """Run the function; an exception becomes an ``error`` outcome the model reads."""
        known = self._async
        if known is None or known[0] is not self.fn:
            known = self._async = (self.fn, inspect.iscoroutinefunction(self.fn))
        try:
            if known[1]:
                value = await self.fn(**kwargs)
            else:
                value = await asyncio.to_thread(_in_thread, self.fn, kwargs)
                if isinstance(value, _Raised):
                    raise value.error
                if inspect.isawaitable(value):
                    value = await value
        except asyncio.CancelledError:
            if being_cancelled():  # the run is being cancelled, not failing
                raise
            # raised by the tool itself: the run ends with it (RunCancelled), as a hook's would,
            # instead of it leaving run_sync as the run's own cancellation
            raise CallbackRaised(asyncio.CancelledError()) from None
        except Exception as exc:  # the model gets the error and may recover
            return ToolOutcome.error(f"{self.name} failed: {type(exc).__name__}: {exc}")
        if isinstance(value, Transfer):
            return ToolOutcome.handed_off(value)
        return ToolOutcome.ok(clip_result(value, self.max_result_chars))

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


@dataclass(frozen=True, slots=True)
class _Raised:
    error: BaseException


def _in_thread(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """``fn(**kwargs)`` in a worker thread. A `GeneratorExit` comes back as a value: through a
    future, asyncio would throw it into the task, where it closes every coroutine on the way
    instead of reaching the run's handler."""
    try:
        return fn(**kwargs)
    except GeneratorExit as exc:
        return _Raised(exc)


def clip_result(value: Any, limit: int | None) -> str:
    """``truncate(to_text(value), limit)``: what goes back to the model. A text that fits is
    returned as it is."""
    if isinstance(value, str) and (limit is None or len(value) <= limit):
        return value
    return truncate(to_text(value), limit)


def truncate(text: str, limit: int | None) -> str:
    """Cut ``text`` to ``limit`` characters, saying so (the note is not counted in the limit)."""
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}\n[truncated: {len(text) - limit} of {len(text)} characters cut; the limit is {limit}]"


def read_arguments(tool_name: str, text: str) -> dict[str, Any] | ToolOutcome:
    """The model's JSON arguments for a call as a dict (empty text: no arguments), or the
    error outcome that tells the model what was wrong with them. Read once per call."""
    try:  # pydantic's parser: what json.loads accepts, several times faster on short texts
        value = from_json(text) if text.strip() else {}
    except ValueError as exc:
        return ToolOutcome.error(
            f"the arguments for {tool_name} are not valid JSON ({exc}). Send a JSON object."
        )
    if not isinstance(value, dict):
        return ToolOutcome.error(
            f"the arguments for {tool_name} must be a JSON object, got {type(value).__name__}."
        )
    return value


def validate_arguments(model: type[BaseModel], tool_name: str, arguments: dict[str, Any]) -> Any:
    """``arguments`` as an instance of ``model``, or the error outcome for the model (a
    `ToolOutcome`). Every kind of tool validates its arguments here."""
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        return ToolOutcome.error(
            f"invalid arguments for {tool_name}: {brief_errors(exc)}. Fix them and call again."
        )


def brief_errors(exc: ValidationError) -> str:
    """The first few errors of a validation as one line (``field: message; ...``), for the
    text a tool call with bad arguments gets back."""
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


class ToolOptions(TypedDict, total=False):
    """The keyword options of `tool` and `function_tool` (each described on `tool`), for
    ``**options: Unpack[ToolOptions]``."""

    max_result_chars: int | None
    needs_approval: Any
    input_guardrails: Sequence[Callable[..., Any]] | None
    output_guardrails: Sequence[Callable[..., Any]] | None
    is_enabled: Any


TOOL_KEYWORDS = frozenset(ToolOptions.__annotations__)


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    **options: Unpack[ToolOptions],
) -> Any:
    """Make a tool of a sync or async function: ``@tool`` or ``@tool(name=..., ...)``.

    The schema comes from the parameters' annotations and defaults; the description from the
    docstring's first paragraph (none is fine), and each parameter's from
    ``Annotated[T, "text"]``, ``Annotated[T, Field(description=...)]`` or the docstring's
    parameter section (Google, NumPy or Sphinx style). Sync functions run in a worker thread,
    off the event loop. ``needs_approval`` (True or ``fn(ctx, arguments) -> bool``) asks the
    run's approver before each call; ``input_guardrails`` / ``output_guardrails`` check the
    arguments and the result (see `agentnb.ToolGuardrail`). ``is_enabled`` (a bool or
    ``fn(ctx, agent) -> bool``, asked each time the agent starts) offers the tool per run.
    """

    def build(f: Callable[..., Any]) -> BaseTool:
        return function_tool(f, name=name, description=description, **options)

    return build(fn) if fn is not None else build


def function_tool(
    fn: Callable[..., Any] | BaseTool,
    *,
    name: str | None = None,
    description: str | None = None,
    **options: Unpack[ToolOptions],
) -> BaseTool:
    """A `Tool` from a function (a tool of any kind is returned as it is); see `tool`."""
    if isinstance(fn, BaseTool):
        return fn
    unknown = sorted(set(options) - TOOL_KEYWORDS)
    if unknown:
        raise UserError(
            f"Unknown tool option(s) {', '.join(unknown)}; tool takes name, description, "
            f"{', '.join(sorted(TOOL_KEYWORDS))}."
        )
    max_result_chars = options.get("max_result_chars", DEFAULT_MAX_RESULT_CHARS)
    needs_approval = options.get("needs_approval", False)
    is_enabled = options.get("is_enabled", True)
    checks.function(fn, "tool(fn)", what="a function, an Agent or a Tool")
    checks.text(name, "tool(name=...)", optional=True)
    checks.text(description, "tool(description=...)", optional=True)
    checks.positive_int(max_result_chars, "tool(max_result_chars=...)")
    tool_name = name or getattr(fn, "__name__", None)
    if (
        not tool_name
        or tool_name == "<lambda>"
        or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool_name)
    ):
        raise UserError(
            f"Tool name {tool_name!r} is not usable: give the function a name of letters, digits, _ or - "
            "(at most 64), or pass tool(fn, name='...')."
        )
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise UserError(
            f"Tool {tool_name!r} is a generator: a tool returns one result. Return a list "
            "(or the joined text) instead of yielding."
        )
    from ..guards.tool_guardrails import check_tool_guardrails
    from .enabled import check_is_enabled

    check_is_enabled(is_enabled, f"tool {tool_name!r}: tool")

    guards = (
        check_tool_guardrails(
            options.get("input_guardrails"), f"tool {tool_name!r}: input_guardrails", "input"
        ),
        check_tool_guardrails(
            options.get("output_guardrails"), f"tool {tool_name!r}: output_guardrails", "output"
        ),
    )
    if needs_approval is not True and needs_approval is not False and not callable(needs_approval):
        raise UserError(
            f"tool {tool_name!r}: needs_approval must be True, False or a callable "
            f"(ctx, arguments) -> bool, got {needs_approval!r}"
        )
    if callable(needs_approval):
        check_callable(
            needs_approval,
            f"tool {tool_name!r}: needs_approval",
            APPROVAL_FORMS[0],
            APPROVAL_FORMS[1],
        )
    summary, arg_docs = parse_docstring(inspect.getdoc(fn) or "")
    text = description or summary
    try:
        args_model, context_param = arguments_model(fn, tool_name, arg_docs)
        schema = clean_schema(args_model.model_json_schema())
    except PydanticUserError as exc:  # a type pydantic cannot describe
        first_line = str(exc).splitlines()[0]
        raise UserError(
            f"Tool {tool_name!r}: its parameters cannot be described as a JSON schema ({first_line}). "
            "Annotate each parameter with a type pydantic knows (str, int, a BaseModel, ...)."
        ) from None
    _warn_if_underspecified(fn, tool_name, text, context_param)
    return Tool(
        tool_name,
        text,
        schema,
        fn,
        args_model,
        max_result_chars,
        context_param,
        input_guardrails=guards[0],
        output_guardrails=guards[1],
        needs_approval=needs_approval,
        is_enabled=is_enabled,
    )


def _warn_if_underspecified(
    fn: Callable[..., Any], name: str, description: str, context_param: str | None
) -> None:
    """A tool the model would be shown with no description, or with parameters of no type,
    is accepted (it works) but warned about at the line that made it: the model cannot tell
    what such a tool is for, nor what to send."""
    untyped = [
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.annotation is inspect.Parameter.empty
        and p.name != context_param
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    problems = []
    if not description.strip():
        problems.append(
            "has no description (the model is shown its name only): give the function a "
            "docstring, or tool(fn, description='...')"
        )
    if untyped:
        problems.append(
            f"has parameters without a type ({', '.join(untyped)}), so the model may send any "
            "JSON for them: annotate them (text: str, count: int, ...)"
        )
    if problems:
        warnings.warn(
            AgentnbWarning(f"tool {name!r} " + "; and ".join(problems)),
            stacklevel=_outside_agentnb(),
        )


def _outside_agentnb() -> int:
    """The stack level of the first caller outside the agentnb package (``@tool``,
    ``Agent(tools=[fn])`` or ``as_tool`` all get here through agentnb's own frames)."""
    package = __name__.split(".")[0]
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == package:
        frame, level = frame.f_back, level + 1
    return level

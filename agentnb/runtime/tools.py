"""Function tools: a Python function becomes a tool whose JSON schema comes from its signature.

Errors never escape a tool call: a tool that raises, an unknown tool name, arguments that are
not JSON or do not fit the schema all go back to the model as text, and the run goes on.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, PydanticUserError, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from ..errors import UserError
from ..models import checks
from ..models.types import ToolSpec
from .callbacks import check_callable
from .tool_context import ToolCallContext
from .tool_schema import arguments_model, clean_schema, json_safe, parse_docstring
from .transfer import Transfer

if TYPE_CHECKING:
    from .agent import Agent

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
    """``fn(ctx, tool_name, arguments) -> ToolGuardrail``: see `agentnb.runtime.tool_guardrails`."""
    output_guardrails: tuple[Callable[..., Any], ...] = field(default=(), kw_only=True)
    """``fn(ctx, tool_name, arguments, result_text) -> ToolGuardrail``."""
    needs_approval: Any = field(default=False, kw_only=True)
    """``True`` or ``fn(ctx, arguments) -> bool`` (sync or async): ask the run's approver first."""
    is_enabled: Any = field(default=True, kw_only=True)
    """``True``, ``False`` or ``fn(ctx, agent) -> bool`` (sync or async), asked each time the
    agent starts: a tool not enabled is not offered (see `agentnb.runtime.enabled`)."""
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

    def sub_agents(self) -> tuple[tuple[str | None, Agent], ...]:
        """The agents a call of this tool may run, each with the team member name that picks
        it (None for a tool that runs one agent); empty for a plain tool. `Agent.graph` and the
        topologies read this."""
        return ()

    @abstractmethod
    async def invoke(self, arguments: str, ctx: ToolCallContext) -> Any:
        """Run the tool on the model's raw JSON arguments; returns the text for the model (or
        a `Transfer` for a handoff)."""


@dataclass(eq=False)
class Tool(BaseTool):
    """A Python function the model can ask for, with its argument validation."""

    fn: Callable[..., Any]
    args_model: type[BaseModel] | None = None
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS
    """The longest result handed back to the model; longer ones are cut, with a note."""
    context_param: str | None = None
    """The parameter that receives the `ToolCallContext`, if the function asks for it."""
    _json_args: type[BaseModel] | None = field(default=None, repr=False)
    """An ``args_model`` that may validate the model's JSON text directly (see `_from_json`):
    set by `function_tool` when every parameter is a str, int or bool."""
    _async: tuple[Callable[..., Any], bool] | None = field(default=None, repr=False)
    """``(fn, inspect.iscoroutinefunction(fn))``, asked once per function, not once per call."""

    async def invoke(self, arguments: str, ctx: ToolCallContext) -> Any:
        """Run the tool on the model's raw JSON arguments; every failure becomes text."""
        fast = self._json_args is not None and self.args_model is self._json_args
        kwargs = self._from_json(arguments) if fast else None
        if kwargs is None:
            parsed = self._parse(arguments)
            if isinstance(parsed, str):  # what was wrong with the arguments, for the model
                return parsed
            kwargs = parsed
        if self.context_param:
            kwargs[self.context_param] = ctx
        return await self.call(kwargs)

    def _from_json(self, arguments: str) -> dict[str, Any] | None:
        """The keyword arguments read from the JSON text by pydantic in one pass (`_parse` decodes
        then validates). For str, int and bool parameters the two accept the same JSON and give
        the same values (a test compares them); None sends the call down `_parse`, which words
        the error for the model."""
        model = self._json_args
        assert model is not None
        try:
            validated = model.model_validate_json(arguments)
        except ValidationError:
            return None
        return {k: getattr(validated, k) for k in model.__pydantic_fields__}

    def _parse(self, arguments: str) -> dict[str, Any] | str:
        """The keyword arguments for the function, or the error to hand back (a str)."""
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return f"Tool error: the arguments for {self.name} are not valid JSON ({exc.msg}). Send a JSON object."
        if not isinstance(parsed, dict):
            return f"Tool error: the arguments for {self.name} must be a JSON object, got {type(parsed).__name__}."
        if self.args_model is None:
            return parsed
        try:
            validated = self.args_model.model_validate(parsed)
        except ValidationError as exc:
            return f"Tool error: invalid arguments for {self.name}: {brief_errors(exc)}. Fix them and call again."
        # __pydantic_fields__ is what model_fields returns, without its descriptor's cost
        return {k: getattr(validated, k) for k in type(validated).__pydantic_fields__}

    async def call(self, kwargs: dict[str, Any]) -> Any:
        """Run the function; an exception becomes "Tool error: ..." text."""
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
            raise
        except Exception as exc:  # the model gets the error and may recover
            return f"Tool error: {type(exc).__name__}: {exc}"
        if isinstance(value, Transfer):
            return value
        return result_text(value, self.max_result_chars)

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


def to_text(value: Any) -> str:
    """How a tool's return value reaches the model: text as is, models and data as JSON.

    Plain JSON data (dicts, lists, numbers) is written by `json.dumps`; anything holding what
    pydantic can serialise (models, dataclasses, dates, in lists or dicts) is written as
    pydantic writes a single model (`to_jsonable_python`'s rules, compact), never as a
    Python repr; an object neither knows becomes its ``str``."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        pass
    try:
        return to_json(value, fallback=str).decode()
    except (PydanticSerializationError, TypeError, ValueError):
        return str(value)


def result_text(value: Any, limit: int | None) -> str:
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


def brief_errors(exc: ValidationError) -> str:
    """The first few errors of a validation as one line (``field: message; ...``), for the
    text a tool call with bad arguments gets back."""
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    needs_approval: Any = False,
    input_guardrails: Sequence[Callable[..., Any]] | None = None,
    output_guardrails: Sequence[Callable[..., Any]] | None = None,
    is_enabled: Any = True,
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
        return function_tool(
            f,
            name=name,
            description=description,
            max_result_chars=max_result_chars,
            needs_approval=needs_approval,
            input_guardrails=input_guardrails,
            output_guardrails=output_guardrails,
            is_enabled=is_enabled,
        )

    return build(fn) if fn is not None else build


def function_tool(
    fn: Callable[..., Any] | BaseTool,
    *,
    name: str | None = None,
    description: str | None = None,
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    needs_approval: Any = False,
    input_guardrails: Sequence[Callable[..., Any]] | None = None,
    output_guardrails: Sequence[Callable[..., Any]] | None = None,
    is_enabled: Any = True,
) -> BaseTool:
    """A `Tool` from a function (a tool of any kind is returned as it is); see `tool`."""
    if isinstance(fn, BaseTool):
        return fn
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
    from .enabled import check_is_enabled
    from .tool_guardrails import check_tool_guardrails

    check_is_enabled(is_enabled, f"tool {tool_name!r}: tool")

    guards = (
        check_tool_guardrails(input_guardrails, f"tool {tool_name!r}: input_guardrails", "input"),
        check_tool_guardrails(
            output_guardrails, f"tool {tool_name!r}: output_guardrails", "output"
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
    json_args = args_model if json_safe(args_model) else None
    return Tool(
        tool_name,
        text,
        schema,
        fn,
        args_model,
        max_result_chars,
        context_param,
        _json_args=json_args,
        input_guardrails=guards[0],
        output_guardrails=guards[1],
        needs_approval=needs_approval,
        is_enabled=is_enabled,
    )

"""An agent's system prompt at the start of its run: text, prompt sections, or a function.

A function may be sync or async and take ``(ctx)`` or ``(ctx, agent)``; it may return text or a
list of `PromptSection`. Anything else (a coroutine never awaited included) ends the run with a
`UserError` naming the agent: it is never sent to a model as text.
"""

from __future__ import annotations

import inspect
import weakref
from typing import TYPE_CHECKING, Any

from ...errors import UserError
from ..data.off_loop import off_loop
from .prompt import PromptSection, assemble_prompt

if TYPE_CHECKING:
    from ..data.context import RunContext
    from .agent import Agent


async def system_prompt(agent: Agent, ctx: RunContext) -> str:
    """``agent``'s system prompt for a run in ``ctx``."""
    instructions = agent.instructions
    if isinstance(instructions, str):
        return instructions
    if callable(instructions):
        args = (ctx, agent) if _takes_agent(instructions) else (ctx,)
        value = await off_loop(instructions, *args)
        return _as_text(value, agent, "its instructions function returned")
    return _as_text(instructions, agent, "its instructions are")


def _as_text(value: Any, agent: Agent, what: str) -> str:
    if inspect.iscoroutine(value):  # given as instructions= itself: never sent, never awaited
        value.close()
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, (PromptSection, str)) for v in value):
        return assemble_prompt(value)
    raise UserError(
        f"Agent {agent.name!r}: {what} a {type(value).__name__}; instructions must be text, a list "
        "of PromptSection, or a function (sync or async) (ctx) or (ctx, agent) returning one."
    )


def check_sections(value: list[Any] | tuple[Any, ...], agent: str) -> None:
    """At construction: a list of instructions holds only text and `PromptSection` (a
    function among them would be sent as its repr, or refused only once the run starts)."""
    for item in value:
        if not isinstance(item, (PromptSection, str)):
            kind = "a function" if callable(item) else f"a {type(item).__name__}"
            raise UserError(
                f"Agent({agent!r}, instructions=[...]): the list holds {kind} ({item!r:.60}); "
                "a list takes text and PromptSection only: for text made at run time, pass one "
                "function (ctx) -> text (or a list of PromptSection) as instructions=fn."
            )


def _takes_agent(fn: Any) -> bool:
    """Whether ``fn`` takes ``(ctx, agent)`` rather than ``(ctx)``."""
    cached = _ARITY.get(fn)
    if cached is None:
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            return False
        required = [
            p
            for p in params
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
        cached = len(required) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)
        try:
            _ARITY[fn] = cached
        except TypeError:  # an unhashable callable: asked each time
            pass
    return cached


_ARITY: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()

"""Tools enabled per run: ``@tool(is_enabled=...)``, ``as_tool(is_enabled=...)``,
``Handoff(is_enabled=...)``.

``is_enabled`` is a bool, or ``fn(ctx, agent) -> bool`` (sync or async) asked each time the
agent starts, with the run's context (its ``deps``, its usage so far) and the agent. A tool
that is not enabled is left out of that agent's requests, as if it were not in its list; a
call the model makes to it anyway gets the unknown-tool answer.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from ...errors import CallbackRaised, UserError
from ..data.callbacks import check_callable

if TYPE_CHECKING:
    from ..agents.agent import Agent
    from ..data.context import RunContext
    from .function import BaseTool


def check_is_enabled(value: Any, where: str) -> Any:
    """``value`` if it is a bool or a function ``(ctx, agent)``, else a `UserError`."""
    if isinstance(value, bool):
        return value
    if not callable(value):
        raise UserError(
            f"{where}(is_enabled=...) must be True, False or a function (ctx, agent) -> bool, "
            f"got {value!r}"
        )
    check_callable(value, f"{where}(is_enabled=...)", ("ctx", "agent"))
    return value


async def enabled_tools(
    tools: dict[str, BaseTool], ctx: RunContext, agent: Agent
) -> dict[str, BaseTool]:
    """The tools of ``agent`` enabled for this start of it (``tools`` itself when all are)."""
    if all(t.is_enabled is True for t in tools.values()):
        return tools
    enabled = {}
    for name, each in tools.items():
        if await _asked(each.is_enabled, ctx, agent):
            enabled[name] = each
    return enabled


async def _asked(is_enabled: Any, ctx: RunContext, agent: Agent) -> bool:
    if isinstance(is_enabled, bool):
        return is_enabled
    try:
        answer = is_enabled(ctx, agent)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:  # user code: it ends the run, as a hook's exception does
        raise CallbackRaised(exc) from None
    return bool(answer)

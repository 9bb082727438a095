"""Checks of the callbacks a user hands agentnb, made when they are given.

A callback of the wrong shape would otherwise fail late (a `TypeError` inside
``result.error``) or silently (a ``needs_approval`` that raises rejects every call; a hook
named as another library names it is never called). `check_callable` binds the arguments
agentnb will pass to the function's signature, once, at construction; `check_hook_names`
catches methods of a `Hooks` subclass that agentnb never calls, naming the one it does.
"""

from __future__ import annotations

import inspect
from typing import Any

from ...errors import UserError


def check_callable(fn: Any, where: str, *forms: tuple[str, ...]) -> None:
    """A `UserError` unless ``fn`` is callable with the positional arguments of one of
    ``forms`` (each the parameter names agentnb's call passes, e.g. ``("ctx", "arguments")``).

    A callable whose signature cannot be read (some builtins) is accepted."""
    shapes = " or ".join(f"({', '.join(form)})" for form in forms)
    if not callable(fn):
        raise UserError(f"{where} must be a function taking {shapes}, got {fn!r}")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    for form in forms:
        try:
            signature.bind(*form)
        except TypeError:
            continue
        return
    name = getattr(fn, "__name__", type(fn).__name__)
    raise UserError(
        f"{where}: {name}{signature} cannot take the arguments agentnb passes, {shapes}. "
        f"Define it as def {name}({', '.join(forms[0])}): ..."
    )


FOREIGN_HOOKS = {
    # openai-agents' RunHooks and AgentHooks
    "on_llm_start": "on_model_start",
    "on_llm_end": "on_model_end",
    "on_start": "on_agent_start",
    "on_end": "on_agent_end",
    # pydantic-ai's and other libraries' words
    "on_run_start": "on_agent_start",
    "on_run_end": "on_agent_end",
    "on_model_request": "on_model_start",
    "on_model_response": "on_model_end",
    "on_request": "on_model_start",
    "on_response": "on_model_end",
    "on_tool_call": "on_tool_start",
    "on_tool_result": "on_tool_end",
    "on_tool_return": "on_tool_end",
}
"""Hook names other libraries use, and the agentnb hook called at that point."""


def check_hook_names(hooks: Any, base: type, where: str) -> None:
    """A `UserError` for an ``on_*`` method of ``hooks`` (an instance of a subclass of
    ``base``) that agentnb never calls, and for a hook whose signature cannot take the
    arguments agentnb passes (those of ``base``'s method)."""
    known = {
        name: tuple(list(inspect.signature(value).parameters)[1:])
        for name, value in vars(base).items()
        if name.startswith("on_") and callable(value)
    }
    for name in known:
        value = getattr(hooks, name, None)
        if not callable(value):
            shown = repr(value)
            shown = shown if len(shown) <= 40 else shown[:40] + "..."
            raise UserError(
                f"{where}: {type(hooks).__name__}.{name} is {type(value).__name__} {shown}, not "
                "a function, and agentnb calls it at that point of every run: define it with "
                "def (or async def), or remove it."
            )
    for cls in type(hooks).__mro__:
        if cls is base or not issubclass(cls, base):
            continue
        for name, value in vars(cls).items():
            if not name.startswith("on_") or not callable(value):
                continue
            if name in known:
                check_callable(
                    getattr(hooks, name), f"{where}: {type(hooks).__name__}.{name}", known[name]
                )
                continue
            instead = FOREIGN_HOOKS.get(name)
            hint = (
                f"agentnb calls {instead}({', '.join(known[instead])}) at that point; rename it"
                if instead is not None
                else f"agentnb's hooks are {', '.join(known)}"
            )
            raise UserError(
                f"{where}: {type(hooks).__name__}.{name} is not a hook agentnb calls, so it would "
                f"never run; {hint}."
            )

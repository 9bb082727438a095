"""Names in a magic's line, looked up in the user namespace: each miss is a one-line
`UsageError` that lists what would have worked."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from IPython.core.error import UsageError
from pydantic import BaseModel

from ..models.registry import providers
from ..runtime.agent import Agent
from ..runtime.tools import BaseTool


def _choices(ns: Mapping[str, Any], hidden: set[str], keep: Callable[[Any], bool]) -> str:
    names = sorted(
        n for n, v in ns.items() if not n.startswith("_") and n not in hidden and _safe(keep, v)
    )
    return ", ".join(names) if names else "none defined yet"


def _safe(keep: Callable[[Any], bool], value: Any) -> bool:
    try:
        return bool(keep(value))
    except Exception:
        return False


def is_model(value: Any) -> bool:
    return not isinstance(value, type) and callable(getattr(value, "request", None))


def is_tool(value: Any) -> bool:
    if isinstance(value, (Agent, BaseTool)):
        return True
    return inspect.isfunction(value) or inspect.iscoroutinefunction(value)


def is_pydantic(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


def resolve_model(spec: str | None, ns: Mapping[str, Any], hidden: set[str]) -> Any:
    """``--model``: a namespace variable (a model client, or a string holding a spec) or a
    spec string ``provider:model``; checked now, so a typo fails at definition, not at run."""
    known = ", ".join(providers())
    variables = _choices(ns, hidden, is_model)
    if spec is None:
        raise UsageError(
            "%%agent: no model: pass --model M (a model variable or a spec such as openai:gpt-4o-mini), "
            "or set %config AgentMagics.default_model = 'openai:gpt-4o-mini'"
        )
    if spec.isidentifier() and spec in ns:
        value = ns[spec]
        if is_model(value):
            return value
        if not isinstance(value, str):
            raise UsageError(
                f"%%agent: --model {spec} is a {type(value).__name__}, not a model client; "
                f"model variables: {variables}; or a spec provider:model with provider one of: {known}"
            )
        spec = value
    prefix, sep, name = spec.partition(":")
    if not sep or not name:
        raise UsageError(
            f"%%agent: unknown model {spec!r}: not a model variable ({variables}) "
            f"nor a spec provider:model with provider one of: {known}"
        )
    if prefix not in providers():
        raise UsageError(
            f"%%agent: unknown model provider {prefix!r} in {spec!r}; known providers: {known}; "
            f"model variables: {variables}"
        )
    return spec


def resolve_tools(text: str, ns: Mapping[str, Any], hidden: set[str]) -> list[Any]:
    """``--tools a,b``: functions become tools, agents become agent tools."""
    names = [n.strip() for n in text.split(",")]
    tools = []
    for name in names:
        if not name:
            raise UsageError(f"%%agent: --tools takes names separated by commas, got {text!r}")
        if name not in ns:
            raise UsageError(
                f"%%agent: unknown tool {name!r}; functions and agents in the namespace: "
                f"{_choices(ns, hidden, is_tool)}"
            )
        value = ns[name]
        if not is_tool(value):
            raise UsageError(
                f"%%agent: tool {name!r} is a {type(value).__name__}, not a function or an agent; "
                f"functions and agents in the namespace: {_choices(ns, hidden, is_tool)}"
            )
        tools.append(value)
    return tools


def resolve_output(name: str, ns: Mapping[str, Any], hidden: set[str]) -> type[BaseModel]:
    """``--output TYPE``: a pydantic model class from the namespace."""
    choices = _choices(ns, hidden, is_pydantic)
    if name not in ns:
        raise UsageError(
            f"%%agent: unknown output type {name!r}; pydantic models in the namespace: {choices}"
        )
    value = ns[name]
    if not is_pydantic(value):
        raise UsageError(
            f"%%agent: --output {name} is not a pydantic model (a BaseModel subclass); "
            f"pydantic models in the namespace: {choices}"
        )
    model: type[BaseModel] = value
    return model


def the_agent(name: str, ns: Mapping[str, Any], hidden: set[str]) -> Agent:
    """``%%agent_run NAME``: an `Agent` from the namespace."""
    value = ns.get(name)
    if isinstance(value, Agent):
        return value
    agents = _choices(ns, hidden, lambda v: isinstance(v, Agent))
    what = "not defined" if name not in ns else f"a {type(value).__name__}, not an Agent"
    raise UsageError(f"%%agent_run: {name!r} is {what}; agents in the namespace: {agents}")

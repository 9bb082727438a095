"""Names in a magic's line, looked up in the user namespace: each miss is a one-line
`UsageError` that lists what would have worked."""

from __future__ import annotations

import inspect
import keyword
import typing
from collections.abc import Callable, Mapping
from typing import Any

from IPython.core.error import UsageError

from ..errors import UserError
from ..models.registry import providers
from ..runtime import Agent, BaseTool, RunResult, Session, output_spec


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


BUILTIN_OUTPUTS: dict[str, type] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "list": list,
    "dict": dict,
}
"""``--output`` names that need no variable."""


def is_output_type(value: Any) -> bool:
    """A type pydantic validates: a class, or a typing form such as ``list[int]``."""
    if not (isinstance(value, type) or typing.get_origin(value) is not None):
        return False
    try:
        output_spec(value)
    except UserError:
        return False
    return True


def resolve_output(name: str, ns: Mapping[str, Any], hidden: set[str]) -> Any:
    """``--output TYPE``: a type from the namespace (a pydantic model, a dataclass, a
    TypedDict, ``Scores = list[int]``, ...) or a builtin type name (str, int, float, ...)."""
    if name in ns and is_output_type(ns[name]):
        return ns[name]
    if name not in ns and name in BUILTIN_OUTPUTS:
        return BUILTIN_OUTPUTS[name]
    choices = _choices(ns, hidden, is_output_type)
    builtins = ", ".join(BUILTIN_OUTPUTS)
    if name not in ns:
        raise UsageError(
            f"%%agent: unknown output type {name!r}; types in the namespace: {choices}; "
            f"or a builtin: {builtins}"
        )
    raise UsageError(
        f"%%agent: --output {name} is a {type(ns[name]).__name__}, not a type pydantic validates; "
        f"types in the namespace: {choices}; or a builtin: {builtins}"
    )


def resolve_result(name: str, ns: Mapping[str, Any], hidden: set[str]) -> RunResult:
    """``--continue PREV``: a `RunResult` from the namespace."""
    value = ns.get(name)
    if isinstance(value, RunResult):
        return value
    results = _choices(ns, hidden, lambda v: isinstance(v, RunResult))
    what = "not defined" if name not in ns else f"a {type(value).__name__}, not a RunResult"
    raise UsageError(
        f"%%agent_run: --continue {name}: {name!r} is {what}; run results in the namespace: {results}"
    )


def resolve_session(name: str, ns: Mapping[str, Any], hidden: set[str]) -> Session | None:
    """``--session S``: the `agentnb.Session` in variable S, or None when S is not defined."""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise UsageError(f"%%agent_run: --session needs a Python identifier, got {name!r}")
    if name not in ns:
        return None
    value = ns[name]
    if isinstance(value, Session):
        return value
    sessions = _choices(ns, hidden, lambda v: isinstance(v, Session))
    raise UsageError(
        f"%%agent_run: --session {name}: {name!r} is a {type(value).__name__}, not an "
        f"agentnb.Session; sessions in the namespace: {sessions}; or a new name for a new one"
    )


def the_agent(name: str, ns: Mapping[str, Any], hidden: set[str]) -> Agent:
    """``%%agent_run NAME``: an `Agent` from the namespace."""
    value = ns.get(name)
    if isinstance(value, Agent):
        return value
    agents = _choices(ns, hidden, lambda v: isinstance(v, Agent))
    what = "not defined" if name not in ns else f"a {type(value).__name__}, not an Agent"
    raise UsageError(f"%%agent_run: {name!r} is {what}; agents in the namespace: {agents}")

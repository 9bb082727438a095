"""What the magics do, as plain functions: `define_agent`, `run_live`, `interpolate`.

The magics only turn a cell's text into these calls (names looked up in the namespace,
options parsed); everything else happens here, so a user can do the same from Python and a
test can check it without IPython.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..runtime import Agent, RunResult

if TYPE_CHECKING:
    from ..models.types import Message
    from ..runtime import Event
    from .monitor import RunMonitor

_TIMEOUTS: weakref.WeakKeyDictionary[Agent, float] = weakref.WeakKeyDictionary()
"""Timeouts given to agents defined with `define_agent`: an agent has none of its own (its
caller sets one), so the notebook keeps it beside the agent for runs and tool use."""

_PLACEHOLDER = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def strip_directives(text: str) -> str:
    """Drop lines starting with ``# NBVAL_`` (nbval's cell markers are not instructions)."""
    kept = [line for line in text.splitlines() if not line.lstrip().startswith("# NBVAL_")]
    return "\n".join(kept).strip()


def interpolate(text: str, namespace: Mapping[str, Any]) -> str:
    """Replace ``{name}`` with ``str(namespace[name])``; only identifiers are placeholders, so
    JSON such as ``{"a": 1}`` passes untouched. ``{{name}}`` stays a literal ``{name}``."""

    def replace(match: re.Match[str]) -> str:
        literal, name = match.group(1), match.group(2)
        if literal is not None:
            return "{" + literal + "}"
        if name not in namespace:
            raise UserError(
                f"{{{name}}} in the text is not defined: define {name} first, "
                f"or write {{{{{name}}}}} for literal braces"
            )
        return str(namespace[name])

    return _PLACEHOLDER.sub(replace, text)


def define_agent(
    name: str,
    instructions: str,
    *,
    model: Any,
    tools: Sequence[Any] = (),
    output: Any = None,
    max_turns: int = 10,
    timeout: float | None = None,
) -> Agent:
    """An `Agent` as ``%%agent`` defines it: ``# NBVAL_`` lines dropped from the instructions,
    agents among ``tools`` become agent tools (with the timeout they were defined with), and
    ``timeout`` is remembered for `run_live` and for when this agent becomes someone's tool."""
    if timeout is not None and timeout <= 0:
        raise UserError(f"timeout must be a positive number of seconds, got {timeout!r}")
    made = [_as_tool(t) for t in tools]
    agent = Agent(
        name,
        strip_directives(instructions),
        model,
        made,
        output_type=output,
        max_turns=max_turns,
    )
    if timeout is not None:
        _TIMEOUTS[agent] = timeout
    return agent


def agent_timeout(agent: Agent) -> float | None:
    """The timeout ``agent`` was defined with (`define_agent` / ``%%agent --timeout``), if any."""
    return _TIMEOUTS.get(agent)


def _as_tool(item: Any) -> Any:
    if isinstance(item, Agent) and item in _TIMEOUTS:
        return item.as_tool(timeout=_TIMEOUTS[item])
    return item


def summary(agent: Agent) -> str:
    """The one line ``%%agent`` prints: name, model, tools, output type, limits."""
    model = agent.model
    model_name = model if isinstance(model, str) else getattr(model, "name", type(model).__name__)
    parts = [f"Agent {agent.name!r}", f"model {model_name}"]
    tools = list(agent.tool_map())
    parts.append(f"tools: {', '.join(tools)}" if tools else "no tools")
    if agent.output_type is not None:
        parts.append(f"output {getattr(agent.output_type, '__name__', agent.output_type)}")
    parts.append(f"max_turns {agent.max_turns}")
    timeout = agent_timeout(agent)
    if timeout is not None:
        parts.append(f"timeout {timeout:g} s")
    return " · ".join(parts)


def run_live(
    agent: Agent,
    input: str | list[Message],
    *,
    timeout: float | None = None,
    monitor: RunMonitor | bool = True,
    run_id: str | None = None,
    stream: bool = True,
    **options: Any,
) -> RunResult:
    """Run ``agent`` from a notebook cell, blocking, with a live `RunMonitor` displayed above
    the result (``monitor=False`` for none, or pass your own).

    The run happens on agentnb's background loop (`agentnb.run_sync`; streamed, with the
    monitor as its ``on_event``), so it works while Jupyter's own loop is running, and
    Kernel -> Interrupt cancels every sub-agent and returns the partial result (``ok=False``,
    `RunCancelled`).
    Streamed, the monitor shows each agent's text as its model writes it, and every call has
    its ``ttft_s``. Does not display the result: the caller does (``%%agent_run`` puts it in
    the monitor's place, `RunMonitor.replace`). ``run_id`` fixes the run's id (random
    otherwise), which keeps its log lines the same from one execution of a notebook to the next.
    """
    from ..runtime import run_sync

    if timeout is None:
        timeout = agent_timeout(agent)
    shown = _monitor(agent, monitor)
    if shown is not None or stream:
        # The events reach the monitor on the run's own thread, in order: a call's text comes
        # before the end of its span, so it never shows the run finished before its last text.
        options["on_event"] = _events_to(shown, options.get("on_event"))
        options["stream"] = stream
    try:
        result: RunResult = run_sync(agent, input, timeout=timeout, run_id=run_id, **options)
    except UserError:  # the run never started (e.g. no API key): no monitor left waiting
        if shown is not None:
            shown.close()
        raise
    if shown is not None:
        shown.finish(result)
    return result


def _events_to(
    shown: RunMonitor | None, theirs: Callable[[Event], None] | None
) -> Callable[[Event], None]:
    """The run's ``on_event``: the monitor's, then the caller's own (``stream`` says whether
    the model calls are streamed, which times their first token)."""

    def on_event(event: Event) -> None:
        if shown is not None:
            shown.on_event(event)
        if theirs is not None:
            theirs(event)

    return on_event


def _monitor(agent: Agent, monitor: RunMonitor | bool) -> RunMonitor | None:
    if monitor is False:
        return None
    from IPython.display import display

    from .monitor import RunMonitor

    shown = RunMonitor(agent.name) if monitor is True else monitor
    display(shown)  # type: ignore[no-untyped-call]
    return shown

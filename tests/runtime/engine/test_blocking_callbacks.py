"""A plain ``def`` callback that blocks (a hook, a guardrail, an instructions function, an
approval check, an approver) does not hold the run past its ``timeout``: it runs off the
event loop, the run ends ``ok=False`` with `RunTimeout` on time, and the callback's thread is
left to finish on its own.

No timing thresholds: each callback waits on an Event that the test sets only after the run
has returned, so a run that waited for its callback would never return before the Event's
own long wait, and the test would see ``finished`` set."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import agentnb as a

HOLD = 30.0
"""How long a callback waits for the test to let it go (far longer than the run's timeout)."""


class Blocking:
    """A callback that blocks until released, noting that it began and that it finished."""

    def __init__(self, returns: Any = None) -> None:
        self.returns = returns
        self.began = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()

    def __call__(self, *args: Any) -> Any:
        self.began.set()
        self.release.wait(HOLD)
        self.finished.set()
        return self.returns


def _hooks(block: Blocking) -> a.Hooks:
    class SlowHooks(a.Hooks):
        def on_model_start(self, ctx, agent, request):  # type: ignore[override]
            block()

    return SlowHooks()


def _tool(**options: Any) -> a.Tool:
    @a.tool(name="lookup", **options)
    def lookup(term: str) -> str:
        """Look a term up."""
        return "found"

    return lookup


CALLBACKS: dict[str, Callable[[Blocking], tuple[a.Agent, dict[str, Any]]]] = {
    "run-hook": lambda b: (a.Agent("w", "x", a.ScriptedModel([a.say("hi")])), {"hooks": _hooks(b)}),
    "agent-hook": lambda b: (
        a.Agent("w", "x", a.ScriptedModel([a.say("hi")]), hooks=_hooks(b)),
        {},
    ),
    "instructions": lambda b: (a.Agent("w", b, a.ScriptedModel([a.say("hi")])), {}),
    "input-guardrail": lambda b: (
        a.Agent(
            "w",
            "x",
            a.ScriptedModel([a.say("hi")]),
            input_guardrails=[b],
        ),
        {},
    ),
    "output-guardrail": lambda b: (
        a.Agent("w", "x", a.ScriptedModel([a.say("hi")]), output_guardrails=[b]),
        {},
    ),
    "tool-guardrail": lambda b: (
        a.Agent(
            "w",
            "x",
            a.ScriptedModel([a.tool_call("lookup", term="q"), a.say("hi")]),
            [_tool(input_guardrails=[b])],
        ),
        {},
    ),
    "needs-approval": lambda b: (
        a.Agent(
            "w",
            "x",
            a.ScriptedModel([a.tool_call("lookup", term="q"), a.say("hi")]),
            [_tool(needs_approval=b)],
        ),
        {"approver": a.approve_all},
    ),
    "approver": lambda b: (
        a.Agent(
            "w",
            "x",
            a.ScriptedModel([a.tool_call("lookup", term="q"), a.say("hi")]),
            [_tool(needs_approval=True)],
        ),
        {"approver": b},
    ),
}

RETURNS = {
    "instructions": "Be brief.",
    "input-guardrail": a.GuardrailResult(tripwire=False),
    "output-guardrail": a.GuardrailResult(tripwire=False),
    "tool-guardrail": a.ToolGuardrail.allow(),
    "needs-approval": True,
    "approver": a.Approval(True),
}


@pytest.mark.parametrize("kind", list(CALLBACKS))
def test_a_blocking_sync_callback_does_not_hold_the_run_past_its_timeout(kind):
    block = Blocking(RETURNS.get(kind))
    agent, options = CALLBACKS[kind](block)
    try:
        result = a.run_sync(agent, "go", timeout=0.3, **options)
        finished_before_the_run_returned = block.finished.is_set()
    finally:
        block.release.set()

    assert block.began.is_set(), "the callback was called"
    assert not finished_before_the_run_returned, "the run waited for its callback"
    assert not result.ok
    assert isinstance(result.error, a.RunTimeout)
    assert result.spans[0].status == "timeout"
    assert block.finished.wait(HOLD), "the callback's thread is left to finish on its own"


@pytest.mark.parametrize("kind", list(CALLBACKS))
def test_a_sync_callback_that_returns_at_once_lets_the_run_finish(kind):
    block = Blocking(RETURNS.get(kind))
    block.release.set()
    agent, options = CALLBACKS[kind](block)

    result = a.run_sync(agent, "go", **options)

    assert result.ok, result.error
    assert block.finished.is_set()

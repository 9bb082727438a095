"""RunOptions: the keyword options of a run, checked once before anything starts."""

from __future__ import annotations

import pytest

from agentnb import Agent, Limits, ScriptedModel, UserError, run_sync, say
from agentnb.runtime import RunOptions


def _agent() -> Agent:
    return Agent("a", "Answer.", model=ScriptedModel([say("hi")]))


@pytest.mark.parametrize(
    "options",
    [
        {"max_turns": 0},
        {"max_turns": True},
        {"max_turns": "3"},
        {"timeout": -1},
        {"timeout": "5"},
        {"timeout": False},
        {"limits": {"max_depth": 1}},
        {"approver": "yes"},
        {"artifacts": {"input": "x"}},
        {"artifacts": ["x"]},
        {"run_id": ""},
        {"listeners": "print"},
    ],
)
def test_a_bad_option_is_a_user_error_before_the_run_starts(options: dict[str, object]) -> None:
    model = ScriptedModel([say("hi")])
    with pytest.raises(UserError):
        run_sync(Agent("a", "Answer.", model=model), "q", **options)
    assert model.requests == []


def test_an_unknown_option_is_named_with_the_ones_a_run_takes() -> None:
    with pytest.raises(UserError, match=r"max_turn\b.*a run takes .*max_turns"):
        run_sync(_agent(), "q", max_turn=3)


def test_timeout_is_a_shortcut_for_the_limits_timeout() -> None:
    options = RunOptions(limits=Limits(max_depth=1), timeout=2.5)
    assert options.run_limits == Limits(max_depth=1, timeout=2.5)
    result = run_sync(_agent(), "q", timeout=2.5, max_turns=2)
    assert result.ok and result.context is not None
    assert result.context.limits.timeout == 2.5 and result.context.max_turns == 2

"""Bad values thrown at the public constructors and run options raise `UserError` or work.

Never anything else: a TypeError from deep inside, an AttributeError, a pydantic error, or a
run that starts and fails later. Numbers given as strings or bools are refused.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentnb as a

ANYTHING = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.sampled_from(["3", "1.5", "", "gpt", object(), [], {}, (), [1], {"a": 1}, print]),
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _agent() -> a.Agent:
    return a.Agent("a", "Answer.", model=a.ScriptedModel([a.say("hi")]))


def _accepts(build: Any) -> None:
    try:
        build()
    except a.UserError as exc:
        assert "\n" not in str(exc).strip(), f"not one line: {exc}"


@pytest.mark.parametrize("field", ["max_depth", "max_model_calls", "max_tokens", "timeout"])
@SETTINGS
@given(value=ANYTHING)
def test_limits(field: str, value: Any) -> None:
    _accepts(lambda: a.Limits(**{field: value}))
    if isinstance(value, (bool, str)):
        with pytest.raises(a.UserError):
            a.Limits(**{field: value})


@pytest.mark.parametrize(
    "option",
    ["limits", "artifacts", "max_turns", "timeout", "approver", "run_id", "listeners", "hooks"],
)
@SETTINGS
@given(value=ANYTHING)
def test_run_options(option: str, value: Any) -> None:
    def run() -> None:
        result = a.run_sync(_agent(), "q", **{option: value})
        assert isinstance(result, a.RunResult)

    _accepts(run)
    if option in ("max_turns", "timeout") and isinstance(value, (bool, str)):
        with pytest.raises(a.UserError):
            run()


@pytest.mark.parametrize(
    "option",
    [
        "name",
        "description",
        "max_turns",
        "timeout",
        "max_tokens",
        "max_result_chars",
        "input_schema",
        "input_builder",
        "extractor",
        "needs_approval",
        "propagate_guardrails",
    ],
)
@SETTINGS
@given(value=ANYTHING)
def test_as_tool(option: str, value: Any) -> None:
    _accepts(lambda: _agent().as_tool(**{option: value}))
    if option in ("max_turns", "timeout", "max_tokens") and isinstance(value, (bool, str)):
        with pytest.raises(a.UserError):
            _agent().as_tool(**{option: value})


@pytest.mark.parametrize(
    "field", ["name", "instructions", "model", "tools", "max_turns", "handoffs", "output_retries"]
)
@SETTINGS
@given(value=ANYTHING)
def test_agent(field: str, value: Any) -> None:
    values: dict[str, Any] = {"name": "a", "model": a.ScriptedModel([a.say("hi")])}
    values[field] = value

    def build_and_run() -> None:
        a.run_sync(a.Agent(**values), "q")

    _accepts(build_and_run)
    if field in ("max_turns", "output_retries") and isinstance(value, (bool, str)):
        with pytest.raises(a.UserError):
            a.Agent(**values)


@pytest.mark.parametrize("option", ["timeout", "max_concurrency", "artifacts", "limits"])
@SETTINGS
@given(value=ANYTHING)
def test_parallel_options(option: str, value: Any) -> None:
    _accepts(lambda: a.run_sync(a.parallel([_agent()], "q", **{option: value})))

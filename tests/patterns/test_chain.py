"""chain(): each stage's output is the next stage's input; a failed stage stops the chain."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import agentnb as a


class Amount(BaseModel):
    value: float
    currency: str


def stage(name: str, *steps: object, latency: float = 0.0, output_type: object = None) -> a.Agent:
    return a.Agent(
        name,
        f"You are the {name} stage.",
        a.ScriptedModel(list(steps), latency),
        output_type=output_type,
    )


async def test_each_stage_reads_the_previous_output():
    extract = stage("Extract", "twelve euros and fifty cents")
    normalise = stage("Normalise", a.say({"value": 12.5, "currency": "EUR"}), output_type=Amount)
    validate = stage("Validate", "valid: 12.50 EUR")
    result = await a.chain(
        [extract, normalise, validate], "Invoice: pay twelve euros and fifty cents."
    )

    assert result.ok and result.outcome == "completed"
    assert result.output == "valid: 12.50 EUR"
    assert normalise.model.requests[0].last_user_text == "twelve euros and fifty cents"  # type: ignore[union-attr]
    # a structured output travels on as its JSON
    assert validate.model.requests[0].last_user_text == '{"value":12.5,"currency":"EUR"}'  # type: ignore[union-attr]
    assert result.outputs["Normalise"] == Amount(value=12.5, currency="EUR")
    calls = result.calls
    assert list(calls["stage"]) == ["Extract", "Normalise", "Validate"]
    assert calls["run_id"].nunique() == 3
    starts, ends = list(calls["started"]), list(calls["ended"])
    assert all(end <= start for end, start in zip(ends, starts[1:]))  # one clock, in sequence


async def test_a_failed_stage_stops_the_chain_with_a_clear_outcome():
    extract = stage("Extract", "some text")
    normalise = stage("Normalise", "not JSON at all", "still not JSON", output_type=Amount)
    validate = stage("Validate", "never reached")
    result = await a.chain([extract, normalise, validate], "Invoice.")

    assert not result.ok and result.output is None
    assert result.failed == "Normalise" and result.skipped == ["Validate"]
    assert isinstance(result.error, a.OutputValidationError)
    assert result.outcome.startswith("stopped at Normalise: failed: OutputValidationError")
    assert validate.model.requests == []  # type: ignore[union-attr]
    assert list(result.table()["status"]) == ["ok", "error", "skipped"]
    assert "stopped at Normalise" in repr(result)


async def test_a_stage_slower_than_its_timeout_stops_the_chain():
    result = await a.chain(
        [stage("Slow", "late", latency=30), stage("Next", "x")], "go", timeout=0.2
    )
    assert result.failed == "Slow"
    assert result.outcome == "stopped at Slow: did not answer within 0.2 s"


async def test_repeated_agents_get_numbered_stage_names():
    echo = stage("Echo", "one", "two")
    result = await a.chain([echo, echo], "start")
    assert result.stages == ["Echo", "Echo#2"] and result.output == "two"
    assert echo.model.requests[1].last_user_text == "one"  # type: ignore[union-attr]
    with pytest.raises(a.UserError, match="at least one agent"):
        await a.chain([], "start")

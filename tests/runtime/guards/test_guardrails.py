"""Input and output guardrails on agents: functions and agents, blocking and concurrent, on
sub-agents, in handoffs and in patterns; a tripwire or a raising guardrail ends the run."""

from __future__ import annotations

import asyncio
from typing import Any

import agentnb as a

LATENCY = 5.0  # the scripted first call's latency: a tripwire must cut it short


def no_secrets(ctx: Any, agent: a.Agent, value: Any) -> a.GuardrailResult:
    return a.GuardrailResult("secret" in str(value), info="mentions a secret")


async def slow_no_secrets(ctx: Any, agent: a.Agent, value: Any) -> a.GuardrailResult:
    await asyncio.sleep(0.01)
    return a.GuardrailResult("secret" in str(value), info="mentions a secret")


def spans(result: a.RunResult, kind: str) -> list[Any]:
    return [s for s in result.spans if s.kind == kind]


async def test_a_tripwire_cancels_the_first_model_call_in_flight():
    model = a.ScriptedModel([a.say("never")], latency=LATENCY)
    agent = a.Agent("w", "x", model, input_guardrails=[slow_no_secrets])

    result = await a.run(agent, "tell me the secret")

    assert not result.ok and isinstance(result.error, a.GuardrailTripped)
    assert (result.error.guardrail, result.error.agent, result.error.stage) == (
        "slow_no_secrets",
        "w",
        "input",
    )
    assert result.error.info == "mentions a secret"
    assert len(model.requests) == 1  # the call was in flight ...
    (call,) = spans(result, "model_call")
    (guard,) = spans(result, "guardrail")
    assert call.status == "cancelled" and guard.status == "tripped"
    assert call.started <= guard.ended <= call.ended  # ... and cut when the tripwire fired,
    assert call.ended - call.started < LATENCY  # before its scripted latency ran out
    assert result.calls["status"].tolist() == ["cancelled"]


async def test_a_concurrent_guardrail_that_passes_lets_the_answer_through():
    model = a.ScriptedModel([a.say("hello")])
    result = await a.run(a.Agent("w", "x", model, input_guardrails=[slow_no_secrets]), "hi")
    assert result.ok and result.output == "hello"
    (guard,) = spans(result, "guardrail")
    assert guard.status == "ok" and guard.attrs["stage"] == "input"


def test_a_blocking_guardrail_runs_before_the_model_is_called():
    model = a.ScriptedModel([a.say("never")])
    agent = a.Agent(
        "w", "x", model, input_guardrails=[a.input_guardrail(no_secrets, blocking=True)]
    )
    result = a.run_sync(agent, "the secret")
    assert isinstance(result.error, a.GuardrailTripped)
    assert model.requests == [] and result.calls.empty


def test_an_output_guardrail_sees_the_validated_output():
    from pydantic import BaseModel

    class Answer(BaseModel):
        text: str

    seen: list[Any] = []

    def check(ctx: Any, agent: a.Agent, value: Any) -> a.GuardrailResult:
        seen.append(value)
        return a.GuardrailResult("secret" in value.text, info=value.text)

    model = a.ScriptedModel([a.say('{"text": "the secret is 42"}')])
    result = a.run_sync(
        a.Agent("w", "x", model, output_type=Answer, output_guardrails=[check]), "q"
    )

    assert seen == [Answer(text="the secret is 42")]
    assert isinstance(result.error, a.GuardrailTripped) and result.error.stage == "output"
    assert result.output is None and result.partial == '{"text": "the secret is 42"}'


def test_an_agent_guardrail_runs_its_agent_and_its_calls_are_in_the_calls_table():
    judge_model = a.ScriptedModel([a.say("UNSAFE")])
    judge = a.Agent("judge", "Say SAFE or UNSAFE.", judge_model)
    guard = a.agent_guardrail(judge, trip_when=lambda out: out == "UNSAFE", blocking=True)
    model = a.ScriptedModel([a.say("never")])

    result = a.run_sync(a.Agent("w", "x", model, input_guardrails=[guard]), "drop tables")

    assert isinstance(result.error, a.GuardrailTripped) and result.error.info == "UNSAFE"
    assert judge_model.requests[0].last_user_text == "drop tables"
    assert result.calls[["agent", "path", "depth"]].values.tolist() == [["judge", "w/judge", 1]]
    (guard_span,) = spans(result, "guardrail")
    judge_span = next(s for s in result.spans if s.kind == "agent" and s.agent == "judge")
    assert judge_span.parent_id == guard_span.span_id and judge_span.attrs["role"] == "guardrail"


def test_a_tripwire_in_a_sub_agent_is_error_text_for_its_caller():
    sub_model = a.ScriptedModel([a.say("never")])
    sub = a.Agent(
        "legal", "x", sub_model, input_guardrails=[a.input_guardrail(no_secrets, blocking=True)]
    )
    boss_model = a.ScriptedModel([a.tool_call("legal", input="the secret"), a.say("ok")])
    result = a.run_sync(a.Agent("boss", "x", boss_model, [sub.as_tool()]), "go")

    assert result.ok
    (text,) = boss_model.requests[1].tool_results
    assert text.startswith("ERROR: legal failed: GuardrailTripped: guardrail 'no_secrets' tripped")


def test_propagate_guardrails_ends_the_whole_run():
    sub = a.Agent(
        "legal", "x", a.ScriptedModel([a.say("the secret")]), output_guardrails=[no_secrets]
    )
    boss_model = a.ScriptedModel([a.tool_call("legal", input="q"), a.say("ok")])
    boss = a.Agent("boss", "x", boss_model, [sub.as_tool(propagate_guardrails=True)])
    result = a.run_sync(boss, "go")
    assert isinstance(result.error, a.GuardrailTripped) and result.error.agent == "legal"
    assert len(boss_model.requests) == 1


def test_a_raising_guardrail_ends_the_run_with_its_exception():
    def broken(ctx: Any, agent: a.Agent, value: Any) -> a.GuardrailResult:
        raise RuntimeError("guardrail bug")

    result = a.run_sync(
        a.Agent("w", "x", a.ScriptedModel([a.say("hi")]), input_guardrails=[broken]), "q"
    )
    assert not result.ok and isinstance(result.error, RuntimeError)
    assert [s.status for s in spans(result, "guardrail")] == ["error"]


def test_a_handoff_targets_input_guardrail_checks_what_it_receives():
    target = a.Agent(
        "target",
        "x",
        a.ScriptedModel([a.say("never")]),
        input_guardrails=[a.input_guardrail(no_secrets, blocking=True)],
    )
    source_model = a.ScriptedModel([a.tool_call("transfer_to_target")])
    result = a.run_sync(a.Agent("src", "x", source_model, handoffs=[target]), "the secret")
    assert isinstance(result.error, a.GuardrailTripped) and result.error.agent == "target"


def test_a_guardrail_in_one_parallel_branch_leaves_the_others():
    guarded = a.Agent(
        "g",
        "x",
        a.ScriptedModel([a.say("no")]),
        input_guardrails=[a.input_guardrail(no_secrets, blocking=True)],
    )
    free = a.Agent("f", "x", a.ScriptedModel([a.say("yes")]))
    fan = a.run_sync(a.parallel({"g": guarded, "f": free}, "the secret"))
    assert fan.outputs == {"f": "yes"}
    assert isinstance(fan.results["g"].error, a.GuardrailTripped)


def test_a_guardrail_returning_something_else_ends_the_run_clearly():
    result = a.run_sync(
        a.Agent("w", "x", a.ScriptedModel([a.say("hi")]), input_guardrails=[lambda c, ag, v: True]),
        "q",
    )
    assert isinstance(result.error, a.UserError) and "GuardrailResult" in str(result.error)


def test_an_agent_is_refused_as_a_guardrail_without_agent_guardrail():
    import pytest

    judge = a.Agent("judge", "x", a.ScriptedModel([]))
    with pytest.raises(a.UserError, match="agent_guardrail"):
        a.Agent("w", "x", a.ScriptedModel([]), input_guardrails=[judge])

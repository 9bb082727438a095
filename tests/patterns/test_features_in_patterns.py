"""Agent-level settings and guardrails hold inside the patterns, which run agents as ordinary runs."""

from __future__ import annotations

from typing import Any

import agentnb as a

COOL = a.ModelSettings(temperature=0.0)


def no_lorem(ctx: Any, agent: a.Agent, value: Any) -> a.GuardrailResult:
    return a.GuardrailResult("lorem" in str(value), info="placeholder text")


def test_verify_loop_sends_each_agents_settings_and_checks_the_writers_output():
    writer_model = a.ScriptedModel([a.say("lorem ipsum")])
    writer = a.Agent(
        "writer", "Write.", writer_model, model_settings=COOL, output_guardrails=[no_lorem]
    )
    verifier_model = a.ScriptedModel([a.say('{"outcome": "approved", "problems": []}')])
    verifier = a.Agent("verifier", "Check.", verifier_model)

    looped = a.run_sync(a.verify_loop(writer, verifier, "a slogan", max_rounds=1))

    assert writer_model.requests[0].settings == COOL
    assert verifier_model.requests == []  # the draft never passed its guardrail
    assert not looped.ok


def test_a_chain_stage_with_settings_and_a_passing_guardrail():
    first_model = a.ScriptedModel([a.say("draft")])
    first = a.Agent("first", "x", first_model, model_settings=COOL, input_guardrails=[no_lorem])
    second = a.Agent("second", "x", a.ScriptedModel([a.say("final")]))
    chained = a.run_sync(a.chain([first, second], "a brief"))
    assert chained.output == "final" and first_model.requests[0].settings == COOL


def shared_model() -> a.ScriptedModel:
    return a.ScriptedModel(
        lambda r: (
            a.say('{"outcome": "approved", "problems": []}')
            if r.agent == "verifier"
            else a.say(f"{r.agent} answers")
        )
    )


def test_the_patterns_take_a_model_and_settings_for_agents_without_their_own():
    shared = shared_model()
    left, right = a.Agent("left", "x"), a.Agent("right", "x")

    fan = a.run_sync(a.parallel([left, right], "go", model=shared, model_settings=COOL))
    chained = a.run_sync(a.chain([left, right], "go", model=shared, model_settings=COOL))
    looped = a.run_sync(
        a.verify_loop(
            a.Agent("writer", "x"),
            a.Agent("verifier", "x"),
            "task",
            model=shared,
            model_settings=COOL,
        )
    )

    assert fan.outputs == {"left": "left answers", "right": "right answers"}
    assert chained.output == "right answers" and looped.ok
    assert sorted(r.agent for r in shared.requests) == sorted(
        ["left", "right", "left", "right", "writer", "verifier"]
    )
    assert {r.settings for r in shared.requests} == {COOL}

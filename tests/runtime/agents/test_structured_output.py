"""Structured output: the final answer is validated against the agent's pydantic output_type."""

from __future__ import annotations

from typing import Literal, Union

from pydantic import BaseModel

import agentnb as a


class Verdict(BaseModel):
    approved: bool
    reason: str


class Refusal(BaseModel):
    kind: Literal["refusal"]
    why: str


class Approval(BaseModel):
    kind: Literal["approval"]
    score: int


async def test_the_answer_is_a_validated_pydantic_object():
    model = a.ScriptedModel([a.say('{"approved": true, "reason": "fine"}')])
    agent = a.Agent("judge", "Judge it.", model, output_type=Verdict)

    result = await a.run(agent, "ship it?")

    assert result.ok and result.output == Verdict(approved=True, reason="fine")
    schema = model.requests[0].output_schema
    assert schema is not None and schema.name == "verdict"
    assert schema.schema["required"] == ["approved", "reason"]
    assert "title" not in schema.schema
    assert result.final_text == '{"approved":true,"reason":"fine"}'


async def test_say_accepts_a_pydantic_object():
    model = a.ScriptedModel([a.say(Verdict(approved=False, reason="no"))])
    result = await a.run(a.Agent("judge", "x", model, output_type=Verdict), "?")
    assert result.output == Verdict(approved=False, reason="no")


async def test_a_union_of_models_picks_the_matching_one():
    model = a.ScriptedModel([a.say('{"kind": "refusal", "why": "out of scope"}')], name="m")
    other = a.ScriptedModel([a.say('{"kind": "approval", "score": 9}')])

    refused = await a.run(a.Agent("j", "x", model, output_type=Refusal | Approval), "?")
    approved = await a.run(a.Agent("j", "x", other, output_type=Union[Refusal, Approval]), "?")  # noqa: UP007

    assert refused.output == Refusal(kind="refusal", why="out of scope")
    assert approved.output == Approval(kind="approval", score=9)
    for m in (model, other):
        schema = m.requests[0].output_schema
        assert schema is not None and schema.schema["required"] == ["response"]
        assert len(schema.schema["properties"]["response"]["anyOf"]) == 2  # wrapped: not an object
        assert schema.name == "refusal_or_approval"


async def test_the_re_ask_for_a_union_names_its_members():
    model = a.ScriptedModel([a.say('{"kind": "other"}'), a.say('{"kind": "approval", "score": 1}')])

    result = await a.run(a.Agent("j", "x", model, output_type=Refusal | Approval), "?")

    assert result.output == Approval(kind="approval", score=1)
    reask = model.requests[1].messages[-1].content or ""
    assert reask.startswith("Your answer could not be read as refusal_or_approval:")


async def test_code_fences_around_the_json_are_stripped():
    model = a.ScriptedModel([a.say('```json\n{"approved": false, "reason": "x"}\n```')])
    other = a.ScriptedModel([a.say('  ```\n{"approved": true, "reason": "y"}```  ')])

    fenced = await a.run(a.Agent("j", "x", model, output_type=Verdict), "?")
    bare_fence = await a.run(a.Agent("j", "x", other, output_type=Verdict), "?")

    assert fenced.output == Verdict(approved=False, reason="x")
    assert bare_fence.output == Verdict(approved=True, reason="y")


async def test_a_bad_answer_is_re_asked_once_then_accepted():
    model = a.ScriptedModel(
        [a.say('{"approved": "maybe"}'), a.say('{"approved": true, "reason": "ok now"}')]
    )

    result = await a.run(a.Agent("judge", "x", model, output_type=Verdict), "?")

    assert result.ok and result.output == Verdict(approved=True, reason="ok now")
    reask = model.requests[1].messages[-1]
    assert reask.role == "user"
    assert reask.content is not None
    assert reask.content.startswith("Your answer could not be read as verdict:")
    assert "approved: Input should be a valid boolean" in reask.content
    assert "reason: Field required" in reask.content
    assert "only a JSON object that matches the schema" in reask.content
    assert model.requests[1].messages[-2].content == '{"approved": "maybe"}'
    assert list(result.calls["turn"]) == [1, 2]


async def test_a_second_bad_answer_ends_the_run_with_output_validation_error():
    model = a.ScriptedModel([a.say("I approve!"), a.say('{"approved": 1.5}'), a.say("never")])

    result = await a.run(a.Agent("judge", "x", model, output_type=Verdict), "?")

    assert not result.ok and result.output is None
    assert isinstance(result.error, a.OutputValidationError)
    assert isinstance(result.error, a.ModelBehaviorError)
    message = str(result.error)
    assert "judge" in message and "verdict" in message and "2 attempt(s)" in message
    assert len(model.requests) == 2  # re-asked exactly once
    assert "Invalid JSON" in (model.requests[1].messages[-1].content or "")
    assert result.partial == '{"approved": 1.5}'
    assert len(result.calls) == 2


async def test_a_bad_answer_on_the_last_turn_is_an_output_error_not_a_turn_limit():
    model = a.ScriptedModel([a.say("not json"), a.say("never asked")])

    result = await a.run(a.Agent("judge", "x", model, output_type=Verdict, max_turns=1), "?")

    assert isinstance(result.error, a.OutputValidationError)
    assert "1 attempt(s)" in str(result.error)
    assert len(model.requests) == 1


async def test_output_retries_bounds_the_re_asks():
    model = a.ScriptedModel([a.say("no")] * 4)
    agent = a.Agent("judge", "x", model, output_type=Verdict, output_retries=2)

    result = await a.run(agent, "?")

    assert isinstance(result.error, a.OutputValidationError)
    assert "3 attempt(s)" in str(result.error)
    assert len(model.requests) == 3


async def test_without_an_output_type_the_text_is_the_output():
    model = a.ScriptedModel([a.say('{"approved": true}')])
    result = await a.run(a.Agent("j", "x", model), "?")
    assert result.output == '{"approved": true}'
    assert model.requests[0].output_schema is None

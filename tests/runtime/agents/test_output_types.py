"""Output types beyond pydantic models: wrapped in ``response`` when not an object, unwrapped
in ``result.output``, re-asked on failure, in a sub-agent and in a chain."""

from __future__ import annotations

import dataclasses
import json
from typing import Literal

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

import agentnb as a


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Person(TypedDict):
    name: str
    age: int


class Verdict(BaseModel):
    ok: bool


CASES = [
    (int, '{"response": 42}', 42, True),
    (bool, '{"response": true}', True, True),
    (float, "2.5", 2.5, True),  # a bare value is read too
    (list[int], '{"response": [1, 2]}', [1, 2], True),
    (dict[str, int], '{"response": {"a": 1}}', {"a": 1}, True),
    (Literal["yes", "no"], '{"response": "no"}', "no", True),
    (Point, '{"x": 1, "y": 2}', Point(1, 2), False),
    (Person, '{"name": "Ann", "age": 3}', {"name": "Ann", "age": 3}, False),
    (Verdict | int, '{"response": {"ok": true}}', Verdict(ok=True), True),
]


@pytest.mark.parametrize(("output_type", "answer", "expected", "wrapped"), CASES)
def test_any_output_type_is_requested_validated_and_unwrapped(
    output_type, answer, expected, wrapped
):
    model = a.ScriptedModel([a.say(answer)])
    result = a.run_sync(a.Agent("w", "x", model, output_type=output_type), "go")

    assert result.ok, result.error
    assert result.output == expected
    schema = model.requests[0].output_schema
    assert schema is not None and schema.schema["type"] == "object"
    assert (list(schema.schema["properties"]) == ["response"]) is wrapped


def test_str_is_plain_text_with_no_schema():
    model = a.ScriptedModel([a.say("hello")])
    result = a.run_sync(a.Agent("w", "x", model, output_type=str), "go")
    assert result.output == "hello" and model.requests[0].output_schema is None


def test_a_wrong_answer_is_re_asked_once_then_accepted():
    model = a.ScriptedModel([a.say('{"response": "many"}'), a.say('{"response": 3}')])
    result = a.run_sync(a.Agent("w", "x", model, output_type=int), "go")

    assert result.ok and result.output == 3
    reask = model.requests[1].messages[-1]
    assert reask.role == "user" and "could not be read as int" in (reask.content or "")


def test_the_re_ask_is_bounded():
    model = a.ScriptedModel([a.say("nope"), a.say("still no")])
    result = a.run_sync(a.Agent("w", "x", model, output_type=list[int]), "go")
    assert not result.ok and isinstance(result.error, a.OutputValidationError)
    assert len(model.requests) == 2


def test_a_sub_agent_with_a_non_object_output_hands_its_caller_json():
    sub = a.Agent(
        "counter", "x", a.ScriptedModel([a.say('{"response": [3, 4]}')]), output_type=list[int]
    )
    boss_model = a.ScriptedModel([a.tool_call("counter", input="count"), a.say("done")])
    result = a.run_sync(a.Agent("boss", "x", boss_model, [sub.as_tool()]), "go")
    assert result.ok and boss_model.requests[1].tool_results == ["[3, 4]"]


def test_a_chain_stage_with_an_int_output():
    stage = a.Agent("n", "x", a.ScriptedModel([a.say('{"response": 7}')]), output_type=int)
    chained = a.run_sync(a.chain([stage], "go"))
    assert chained.output == 7


def test_final_text_of_a_wrapped_output_is_its_json():
    model = a.ScriptedModel([a.say('{"response": {"a": 1}}')])
    result = a.run_sync(a.Agent("w", "x", model, output_type=dict[str, int]), "go")
    assert json.loads(result.final_text) == {"a": 1}

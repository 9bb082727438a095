"""Whatever a tool returns that pydantic can write reaches the model as JSON, never as a repr."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass

from pydantic import BaseModel

import agentnb as a


class Flight(BaseModel):
    number: str
    price: int


@dataclass
class Booking:
    flight: Flight
    day: datetime.date


def results_sent(value: object) -> str:
    @a.tool
    def search(query: str) -> object:
        """Search flights."""
        return value

    model = a.ScriptedModel([a.tool_call("search", query="AK"), a.say("done")])
    result = a.run_sync(a.Agent("agent", "x", model, [search]), "go")
    assert result.ok
    return model.requests[1].tool_results[0]


def test_a_single_model_is_sent_as_its_json():
    assert results_sent(Flight(number="AK1", price=350)) == '{"number":"AK1","price":350}'


def test_a_list_of_models_is_sent_in_the_same_form():
    sent = results_sent([Flight(number="AK1", price=350), Flight(number="AK2", price=90)])

    assert sent == '[{"number":"AK1","price":350},{"number":"AK2","price":90}]'
    assert "number=" not in sent


def test_dicts_of_models_and_dataclasses_are_json():
    sent = results_sent({"cheapest": Flight(number="AK2", price=90)})
    booking = results_sent(Booking(Flight(number="AK1", price=350), datetime.date(2026, 12, 1)))

    assert json.loads(sent) == {"cheapest": {"number": "AK2", "price": 90}}
    assert json.loads(booking) == {
        "flight": {"number": "AK1", "price": 350},
        "day": "2026-12-01",
    }


def test_plain_data_keeps_its_form_and_unknown_objects_their_str():
    class Opaque:
        def __str__(self) -> str:
            return "opaque thing"

    assert results_sent({"a": 1, "b": [1, 2]}) == '{"a": 1, "b": [1, 2]}'
    assert results_sent([Opaque()]) == '["opaque thing"]'


def test_a_sub_agent_s_structured_list_reaches_its_caller_as_json():
    helper = a.Agent(
        "helper",
        "Find flights.",
        a.ScriptedModel([a.say('{"response": [{"number": "AK1", "price": 350}]}')]),
        output_type=list[Flight],
    )
    model = a.ScriptedModel([a.tool_call("helper", input="find"), a.say("done")])

    result = a.run_sync(a.Agent("lead", "x", model, [helper]), "go")

    assert result.ok
    assert model.requests[1].tool_results == ['[{"number":"AK1","price":350}]']

"""`agentnb.TestModel`: every tool called once with arguments valid for its schema (the same on
every run of a seed), then an answer valid for the output type; `Agent.override(model=...)`."""

from __future__ import annotations

import datetime as dt
import enum
import json
import uuid
from dataclasses import dataclass
from typing import Annotated, Literal, Optional

import pytest
from pydantic import BaseModel, Field, TypeAdapter
from typing_extensions import TypedDict

import agentnb as a
from agentnb.models.schema_values import schema_value
from agentnb.runtime.agents.output import output_spec


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str = Field(min_length=3, max_length=5)
    number: int = Field(ge=10, le=12)


class Person(BaseModel):
    name: str
    age: Annotated[int, Field(gt=0, lt=130)]
    score: float = Field(ge=0.5, le=0.75)
    email: str | None = None
    tags: list[str] = Field(min_length=2, max_length=3)
    address: Address
    colour: Colour
    kind: Literal["a", "b"]
    born: dt.date
    seen: dt.datetime
    ident: uuid.UUID
    extra: dict[str, int] = {}
    pair: tuple[int, str] = (1, "x")


class Tree(BaseModel):
    label: str
    children: list[Tree] = []
    parent: Optional[Tree] = None  # noqa: UP045 (pydantic writes the anyOf-with-null form)


@dataclass
class Point:
    x: int
    y: float


class Movie(TypedDict):
    title: str
    year: int


TYPES = [Person, Tree, Point, Movie, int, list[Address], Address | Point, dict[str, list[int]]]


@pytest.mark.parametrize("kind", TYPES, ids=lambda t: getattr(t, "__name__", str(t)))
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5, 6, 7])
def test_generated_values_are_valid_for_their_schema(kind, seed):
    spec = output_spec(kind)
    assert spec is not None
    value = schema_value(spec.schema.schema, seed)
    spec.validate(json.dumps(value))  # raises if the value does not fit
    assert schema_value(spec.schema.schema, seed) == value  # deterministic


def test_different_seeds_give_different_values():
    schema = TypeAdapter(Person).json_schema()
    assert len({json.dumps(schema_value(schema, s), sort_keys=True) for s in range(6)}) > 1


@a.tool
def lookup(city: str, days: int = 3) -> str:
    """Look up the forecast."""
    return f"sunny in {city} for {days} days"


@a.tool
def book(person: Person) -> str:
    """Book a trip for a person."""
    return f"booked for {person.name}, {person.age}"


class Plan(BaseModel):
    city: str
    nights: int = Field(ge=1, le=5)


def test_every_tool_is_called_once_with_valid_arguments_then_the_output_type_answers():
    model = a.TestModel(seed=3)
    agent = a.Agent("planner", "Plan.", model, [lookup, book], output_type=Plan)

    result = a.run_sync(agent, "plan a trip")

    assert result.ok, result.error
    assert isinstance(result.output, Plan) and 1 <= result.output.nights <= 5
    first, second = model.requests
    assert [t.name for t in first.tools] == ["lookup", "book"]
    assert json.loads(result.new_items[0].tool_calls[0].arguments).keys() == {"city"}
    calls = result.new_items[0].tool_calls
    assert [c.name for c in calls] == ["lookup", "book"]
    Person.model_validate(json.loads(calls[1].arguments)["person"])  # valid for the schema
    # what the model received next: both tools' results
    results = [m.content for m in second.messages if m.role == "tool"]
    assert results[0].startswith("sunny in ") and results[1].startswith("booked for ")
    assert not any(r.startswith("ERROR") for r in results)
    assert second.output_schema is not None and second.output_schema.name == "plan"


def test_the_same_seed_calls_with_the_same_arguments_every_run():
    def arguments(seed: int) -> list[str]:
        model = a.TestModel(seed=seed)
        a.run_sync(a.Agent("p", "", model, [lookup, book]), "go")
        return [c.arguments for c in model.requests[1].messages[1].tool_calls]

    assert arguments(1) == arguments(1)
    assert arguments(1) != arguments(2)


def test_without_output_type_it_answers_the_tools_results_as_json_or_says_success():
    model = a.TestModel()
    result = a.run_sync(a.Agent("p", "", model, [lookup]), "go")
    assert json.loads(result.output)["lookup"].startswith("sunny in ")
    assert a.run_sync(a.Agent("q", "", a.TestModel()), "go").output == "success (no tool calls)"
    assert a.run_sync(a.Agent("r", "", a.TestModel(text="hi")), "go").output == "hi"


def test_call_tools_and_a_given_output():
    model = a.TestModel(call_tools=["lookup"], output=Plan(city="Oslo", nights=2))
    result = a.run_sync(a.Agent("p", "", model, [lookup, book], output_type=Plan), "go")
    assert result.output == Plan(city="Oslo", nights=2)
    assert [c.name for c in result.new_items[0].tool_calls] == ["lookup"]


def test_a_tool_named_that_the_agent_does_not_offer_ends_the_run_saying_which_it_offers():
    result = a.run_sync(a.Agent("p", "", a.TestModel(call_tools=["nope"]), [lookup]), "go")
    assert not result.ok and "'nope'" in str(result.error) and "lookup" in str(result.error)


def test_sub_agents_run_on_a_test_model_too():
    sub = a.Agent("sub", "", a.TestModel(), [lookup])
    boss_model = a.TestModel(seed=1)
    result = a.run_sync(a.Agent("boss", "", boss_model, [sub]), "go")
    assert result.ok, result.error
    assert list(result.calls["path"]) == ["boss", "boss/sub", "boss/sub", "boss"]


def test_test_model_options_are_checked():
    with pytest.raises(a.UserError, match=r"TestModel\(seed=\.\.\.\) must be an int"):
        a.TestModel(seed="x")  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match=r"call_tools"):
        a.TestModel(call_tools="lookup")  # type: ignore[arg-type]


# -- Agent.override


def build_support_agent() -> a.Agent:
    """Code under test that builds its agent with a real model."""
    return a.Agent("support", "Help.", "openai:gpt-4o-mini", [lookup])


def test_override_swaps_the_model_inside_the_block_only(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-used")
    agent = build_support_agent()
    model = a.TestModel()
    with agent.override(model=model) as same:
        assert same is agent
        result = a.run_sync(agent, "help")
    assert result.ok and len(model.requests) == 2
    assert agent.model == "openai:gpt-4o-mini"  # the agent is left as it was
    import agentnb.models

    monkeypatch.setattr(agentnb.models, "ALLOW_MODEL_REQUESTS", False)
    after = a.run_sync(agent, "help")  # outside the block: the real model, refused here
    assert not after.ok and "ALLOW_MODEL_REQUESTS" in str(after.error)
    assert len(model.requests) == 2


def test_override_reaches_a_sub_agent_and_blocks_nest():
    sub = a.Agent("sub", "", a.ScriptedModel([]))
    boss = a.Agent("boss", "", a.ScriptedModel([a.tool_call("sub", input="x"), a.say("ok")]), [sub])
    outer, inner = a.TestModel(text="outer"), a.TestModel(text="inner")
    with sub.override(model=outer):
        with sub.override(model=inner):
            assert a.run_sync(boss, "go").ok
        assert len(inner.requests) == 1 and outer.requests == []
    assert boss.model.requests[1].messages[-1].content == "inner"


def test_override_takes_only_a_model():
    agent = a.Agent("x", "")
    with pytest.raises(a.UserError, match=r"override\(model=\.\.\.\) must be a model client"):
        agent.override(model=42).__enter__()  # type: ignore[arg-type]

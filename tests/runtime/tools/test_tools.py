"""Tools: schemas from signatures, errors as text for the model, truncation, concurrency."""

from __future__ import annotations

import asyncio
import threading

import pytest
from pydantic import BaseModel

import agentnb as a


def run_agent(model: a.ScriptedModel, tools: list[object], text: str = "go") -> a.RunResult:
    return a.run_sync(a.Agent("worker", "You work.", model, tools), text)


# -- the schema a model is shown


def test_schema_and_description_come_from_the_signature_and_docstring():
    @a.tool
    def forecast(city: str, days: int = 3, metric: bool = True) -> str:
        """Forecast the weather for a city.

        Longer notes the model does not need.

        Args:
            city: The city, e.g. "Lyon".
            days (int): How many days ahead.
        """
        return city

    assert isinstance(forecast, a.Tool)
    assert forecast.name == "forecast"
    assert forecast.description == "Forecast the weather for a city."
    assert forecast.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": 'The city, e.g. "Lyon".'},
            "days": {"type": "integer", "default": 3, "description": "How many days ahead."},
            "metric": {"type": "boolean", "default": True},
        },
        "required": ["city"],
    }
    assert forecast.spec.as_dict()["parameters"] is forecast.parameters


class Address(BaseModel):
    street: str
    zip: str


def test_a_nested_model_parameter_and_a_name_override():
    @a.tool(name="mail-to", description="Send a letter.", max_result_chars=10)
    async def send(to: Address, title: str) -> str:
        return "sent"

    assert send.name == "mail-to" and send.description == "Send a letter."
    assert send.max_result_chars == 10
    props = send.parameters["properties"]
    assert props["to"] == {"$ref": "#/$defs/Address"}
    assert props["title"] == {"type": "string"}  # a parameter called "title" survives
    assert send.parameters["$defs"]["Address"]["required"] == ["street", "zip"]


def test_the_context_parameter_is_not_shown_to_the_model():
    @a.tool
    def where(query: str, ctx: a.ToolCallContext) -> str:
        """Say where the call comes from."""
        return ctx.caller.path

    assert list(where.parameters["properties"]) == ["query"]
    model = a.ScriptedModel([a.tool_call("where", query="q"), a.say("ok")])
    run_agent(model, [where])
    assert model.requests[1].tool_results == ["worker"]


def test_a_return_type_local_to_a_function_does_not_hide_the_context_parameter():
    class Local(BaseModel):  # unresolvable by get_type_hints under future annotations
        v: int

    @a.tool
    def make(v: int, ctx: a.ToolCallContext) -> Local:
        """Make one."""
        return Local(v=v)

    assert make.context_param == "ctx"
    assert list(make.parameters["properties"]) == ["v"]
    model = a.ScriptedModel([a.tool_call("make", v=3), a.say("ok")])
    run_agent(model, [make])
    assert model.requests[1].tool_results == ['{"v":3}']


def test_a_parameter_type_that_cannot_be_described_is_a_user_error():
    class Local(BaseModel):
        v: int

    def use(item: Local) -> str:
        """Use an item."""
        return "ok"

    with pytest.raises(a.UserError, match="'use'.*'Local'.*'item'.*module level"):
        a.tool(use)

    class Opaque:  # not a type pydantic can describe
        pass

    def take(thing: Opaque) -> str:
        """Take a thing."""
        return "ok"

    take.__annotations__["thing"] = Opaque
    with pytest.raises(a.UserError, match="'take'.*JSON schema"):
        a.tool(take)


# -- how tools run


async def test_sync_tools_run_off_the_event_loop_and_async_tools_on_it():
    threads: dict[str, threading.Thread] = {}

    @a.tool
    def blocking(x: int) -> int:
        """A sync tool."""
        threads["sync"] = threading.current_thread()
        return x * 2

    @a.tool
    async def nonblocking(x: int) -> int:
        """An async tool."""
        threads["async"] = threading.current_thread()
        return x + 1

    model = a.ScriptedModel(
        [a.tool_call("blocking", x=4), a.tool_call("nonblocking", x=4), a.say("ok")]
    )
    result = await a.run(a.Agent("w", "x", model, [blocking, nonblocking]), "go")

    loop_thread = threading.current_thread()  # the test's loop runs here
    assert result.ok
    assert threads["sync"] is not loop_thread
    assert threads["async"] is loop_thread
    assert model.requests[2].tool_results == ["8", "5"]


def test_return_values_become_text():
    class Row(BaseModel):
        n: int

    @a.tool
    def data() -> dict:
        """Some data."""
        return {"rows": [1, 2], "name": "é"}

    @a.tool
    def model_out() -> Row:
        """A pydantic object."""
        return Row(n=7)

    @a.tool
    def nothing() -> None:
        """Returns nothing."""

    model = a.ScriptedModel(
        [[a.tool_call("data"), a.tool_call("model_out"), a.tool_call("nothing")], a.say("ok")]
    )
    run_agent(model, [data, model_out, nothing])
    assert model.requests[1].tool_results == ['{"rows": [1, 2], "name": "é"}', '{"n":7}', ""]


def test_a_raising_tool_sends_its_error_to_the_model_and_the_run_goes_on():
    @a.tool
    def divide(x: int, y: int) -> float:
        """Divide x by y."""
        return x / y

    model = a.ScriptedModel(
        [a.tool_call("divide", x=1, y=0), a.tool_call("divide", x=6, y=3), a.say("2")]
    )
    result = run_agent(model, [divide])

    assert result.ok and result.output == "2"
    assert model.requests[1].tool_results == [
        "ERROR: divide failed: ZeroDivisionError: division by zero"
    ]
    assert model.requests[2].tool_results[-1] == "2.0"
    statuses = [s.status for s in result.spans if s.kind == "tool_call"]
    assert statuses == ["error", "ok"]


def test_a_long_result_is_truncated_with_a_note():
    @a.tool(max_result_chars=50)
    def dump() -> str:
        """Return a lot of text."""
        return "x" * 120

    model = a.ScriptedModel([a.tool_call("dump"), a.say("ok")])
    run_agent(model, [dump])

    sent = model.requests[1].tool_results[0]
    assert sent.startswith("x" * 50 + "\n[truncated")
    assert "x" * 51 not in sent
    assert "70 of 120 characters cut" in sent and "the limit is 50" in sent


def test_no_limit_keeps_the_whole_result():
    @a.tool(max_result_chars=None)
    def dump() -> str:
        """Return a lot of text."""
        return "y" * 30_000

    model = a.ScriptedModel([a.tool_call("dump"), a.say("ok")])
    run_agent(model, [dump])
    assert model.requests[1].tool_results == ["y" * 30_000]


@a.tool
def square(n: int) -> int:
    """Square a number."""
    return n * n


def test_an_unknown_tool_name_goes_back_to_the_model():
    model = a.ScriptedModel([a.tool_call("cube", n=2), a.say("sorry")])
    result = run_agent(model, [square])

    assert result.ok
    sent = model.requests[1].tool_results[0]
    assert sent.startswith("ERROR:")
    assert "'cube'" in sent and "Available tools: square" in sent
    tool_span = next(s for s in result.spans if s.kind == "tool_call")
    assert tool_span.status == "error" and tool_span.name == "cube"


def test_invalid_json_arguments_go_back_to_the_model():
    bad = a.ToolCall("square", '{"n": 2')
    model = a.ScriptedModel([bad, a.ToolCall("square", "[1, 2]"), a.say("ok")])
    result = run_agent(model, [square])

    assert result.ok
    first, second = model.requests[2].tool_results
    assert first.startswith("ERROR: the arguments for square are not valid JSON")
    assert second == "ERROR: the arguments for square must be a JSON object, got list."


def test_arguments_that_fail_the_schema_go_back_to_the_model():
    model = a.ScriptedModel(
        [
            a.tool_call("square", n="two"),
            a.tool_call("square"),
            a.tool_call("square", n=2, extra=1),
            a.tool_call("square", n=3),
            a.say("9"),
        ]
    )
    result = run_agent(model, [square])

    assert result.ok and result.output == "9"
    wrong_type, missing, extra, good = model.requests[4].tool_results
    assert wrong_type.startswith("ERROR: invalid arguments for square: n:")
    assert "integer" in wrong_type
    assert "n: Field required" in missing
    assert "extra: Extra inputs are not permitted" in extra
    assert good == "9"


def test_empty_arguments_mean_no_arguments():
    @a.tool
    def now() -> str:
        """The time."""
        return "noon"

    model = a.ScriptedModel([a.ToolCall("now", ""), a.say("ok")])
    run_agent(model, [now])
    assert model.requests[1].tool_results == ["noon"]


# -- concurrency


async def test_several_calls_in_one_turn_run_concurrently():
    """Each call waits until all three have started: run one after another, they would hang."""
    started: list[str] = []
    all_started = asyncio.Event()

    @a.tool
    async def slow(tag: str) -> str:
        """Wait for the others."""
        started.append(tag)
        if len(started) == 3:
            all_started.set()
        await asyncio.wait_for(all_started.wait(), 5)
        return tag

    model = a.ScriptedModel(
        [[a.tool_call("slow", tag=t) for t in "abc"], a.say("ok")],
    )
    result = await a.run(a.Agent("w", "x", model, [slow]), "go")

    assert result.ok, result.error
    assert model.requests[1].tool_results == ["a", "b", "c"]  # in call order
    spans = [s for s in result.spans if s.kind == "tool_call"]
    assert len(spans) == 3
    last_start = max(s.started for s in spans)
    first_end = min(s.ended for s in spans if s.ended is not None)
    assert last_start < first_end  # all three were running at once


async def test_sync_tools_in_one_turn_run_in_parallel_threads():
    barrier = threading.Barrier(2, timeout=5)

    @a.tool
    def meet(tag: str) -> str:
        """Wait at the barrier."""
        barrier.wait()  # raises BrokenBarrierError if the other call never runs alongside
        return tag

    model = a.ScriptedModel([[a.tool_call("meet", tag="x"), a.tool_call("meet", tag="y")], "ok"])
    result = await a.run(a.Agent("w", "x", model, [meet]), "go")

    assert model.requests[1].tool_results == ["x", "y"]
    spans = [s for s in result.spans if s.kind == "tool_call"]
    assert max(s.started for s in spans) < min(s.ended for s in spans if s.ended is not None)


# -- how a call ended: one typed outcome read by the trace, the events and the model


def test_each_way_a_call_ends_is_one_outcome_seen_alike_by_model_trace_and_events():
    def twice(n: int) -> int:
        """Double n."""
        return 2 * n

    double = a.tool(twice, name="double")

    def no_sevens(ctx, tool_name, arguments):
        if arguments.get("n") == 7:
            return a.ToolGuardrail.reject("sevens are not allowed")
        return a.ToolGuardrail.allow()

    guarded = a.tool(twice, name="guarded", input_guardrails=[no_sevens])
    model = a.ScriptedModel(
        [
            [
                a.tool_call("double", n=2),
                a.tool_call("double", n="x"),
                a.tool_call("guarded", n=7),
                a.tool_call("missing"),
            ],
            a.say("done"),
        ]
    )
    ended: list[a.ToolCallEnded] = []
    result = a.run_sync(
        a.Agent("worker", "You work.", model, [double, guarded]),
        "go",
        on_event=lambda e: ended.append(e) if isinstance(e, a.ToolCallEnded) else None,
    )

    assert result.ok
    sent = model.requests[1].tool_results
    assert sent[0] == "4"
    assert sent[1].startswith("ERROR: invalid arguments for double: n:")
    assert sent[2] == "sevens are not allowed"
    assert sent[3] == "ERROR: there is no tool named 'missing'. Available tools: double, guarded."
    spans = [s for s in result.spans if s.kind == "tool_call"]
    assert [s.status for s in spans] == ["ok", "error", "refused", "error"]
    seen = {e.span_id: e for e in ended}  # the calls ran concurrently: events in any order
    in_order = [seen[s.span_id] for s in spans]
    assert [e.kind for e in in_order] == ["ok", "error", "rejected", "error"]
    assert [e.ok for e in in_order] == [True, False, False, False]
    assert [e.result_text for e in in_order] == sent


def test_the_outcome_text_is_made_in_one_place():
    assert a.ToolOutcome.ok("4").text == "4"
    assert a.ToolOutcome.error("it broke").text == "ERROR: it broke"
    assert a.ToolOutcome.error("late", status="timeout").status == "timeout"
    assert a.ToolOutcome.rejected("no").text == "no"
    assert a.ToolOutcome.rejected("no").status == "refused"


async def test_a_tool_notices_its_function_was_replaced():
    def plain(text: str) -> str:
        """Append 1."""
        return text + "1"

    made = a.tool(plain)
    assert (await made.call({"text": "a"})).message == "a1"  # sync: run in a thread

    async def shout(text: str) -> str:
        return text.upper()

    made.fn = shout
    assert (await made.call({"text": "a"})).message == "A"


def test_a_handoff_and_a_late_sub_agent_are_outcomes_too():
    import asyncio

    async def slow(request: a.ModelRequest) -> str:
        await asyncio.sleep(1)
        return "too late"

    helper = a.Agent("helper", "Help.", a.FunctionModel(slow))
    target = a.Agent("target", "Finish.", a.ScriptedModel([a.say("finished")]))
    model = a.ScriptedModel([a.tool_call("helper", input="x"), a.tool_call("transfer_to_target")])
    boss = a.Agent("boss", "Route.", model, [helper.as_tool(timeout=0.05)], handoffs=[target])
    ended: list[a.ToolCallEnded | a.HandoffEvent] = []
    result = a.run_sync(
        boss,
        "go",
        on_event=lambda e: (
            ended.append(e) if isinstance(e, (a.ToolCallEnded, a.HandoffEvent)) else None
        ),
    )

    assert result.ok and result.output == "finished"
    assert model.requests[1].tool_results == ["ERROR: helper did not answer within 0.05 s."]
    assert [(e.name, e.kind, e.ok) for e in ended[:1]] == [("helper", "error", False)]
    # a handoff is reported as a handoff, not as a tool call
    assert [(type(e).__name__, e.target) for e in ended[1:]] == [("HandoffEvent", "target")]
    spans = {s.name: s.status for s in result.spans if s.kind == "tool_call"}
    assert spans == {"helper": "timeout", "transfer_to_target": "ok"}

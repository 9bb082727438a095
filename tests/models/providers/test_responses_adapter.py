"""OpenAIResponsesModel through the real ``openai`` client against Responses API servers on 127.0.0.1.

Most tests use `agentnb.models.providers.openai_responses.server.ResponsesServer`, the stateful stand-in the
package ships (it serves a ScriptedModel, keeps each response, continues one named by
``previous_response_id`` and bills the whole context); the retry tests use the scripted
stub of the other adapters' tests (tests/_stub_server.py) to fail on purpose.
"""

from __future__ import annotations

import asyncio
import json
import pickle
import uuid
from typing import Any

import pytest
from _sse_reply import Streamed, sse
from _stub_server import Reply, StubServer
from pydantic import BaseModel

import agentnb as a
from agentnb.models import Backoff, ModelRequest
from agentnb.models.deltas import TextChunk, ToolCallChunk
from agentnb.models.providers.openai_responses.server import ResponsesServer, stream_events
from agentnb.models.registry import model_from_spec
from agentnb.trace.render import result_text

KEY = "sk-test-" + uuid.uuid4().hex
FAST = Backoff(initial=0.001, jitter=0.0)


@a.tool
def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


class Verdict(BaseModel):
    risk: str
    score: int


def responses_model(url: str, **options: Any) -> a.OpenAIResponsesModel:
    options.setdefault("backoff", FAST)
    return a.OpenAIResponsesModel("fake-model", base_url=url, api_key=KEY, **options)


def adding_script() -> a.ScriptedModel:
    return a.ScriptedModel([a.tool_call("add", x=2, y=3), a.say("5")])


def test_a_tool_loop_goes_over_the_wire_in_responses_shape():
    with ResponsesServer(adding_script()) as server:
        result = a.run_sync(a.Agent("calc", "You add.", responses_model(server.url), [add]), "2+3?")

    assert result.ok, result.error
    assert result.output == "5"
    first, second = server.received
    assert first["model"] == "fake-model" and first["instructions"] == "You add."
    assert first["input"] == [{"role": "user", "content": "2+3?"}]
    assert first["store"] is False and "previous_response_id" not in first
    assert first["tools"] == [
        {
            "type": "function",
            "name": "add",
            "description": "Add two integers.",
            "parameters": add.spec.parameters,
            "strict": False,
        }
    ]
    call_id = second["input"][1]["call_id"]
    assert second["input"] == [
        {"role": "user", "content": "2+3?"},
        {"type": "function_call", "call_id": call_id, "name": "add", "arguments": '{"x":2,"y":3}'},
        {"type": "function_call_output", "call_id": call_id, "output": "5"},
    ]
    assert server.stored == {}  # store=false: nothing kept
    calls = result.calls
    assert calls["chars_on_wire"].tolist() == calls["chars_in"].tolist()  # the whole request went
    assert calls["provider_tokens_in"].tolist() == [-(-c // 4) for c in calls["chars_in"]]


def test_server_state_sends_only_the_new_items_while_the_whole_context_is_billed():
    with ResponsesServer(adding_script()) as server:
        model = responses_model(server.url, conversation="server")
        result = a.run_sync(a.Agent("calc", "You add.", model, [add]), "2+3?")
    with ResponsesServer(adding_script()) as whole:
        full = a.run_sync(a.Agent("calc", "You add.", responses_model(whole.url), [add]), "2+3?")

    assert result.ok and result.output == "5"
    first, second = server.received
    assert first["store"] is True and "previous_response_id" not in first
    assert second["previous_response_id"] == "resp_0001"
    assert second["input"] == [
        {"type": "function_call_output", "call_id": "call_resp_0001_0", "output": "5"}
    ]
    assert second["instructions"] == "You add." and second["tools"] == first["tools"]
    assert list(server.stored) == ["resp_0001", "resp_0002"]
    rows, rows_full = result.calls, full.calls
    assert rows["chars_in"].tolist() == rows_full["chars_in"].tolist()
    assert rows["provider_tokens_in"].tolist() == rows_full["provider_tokens_in"].tolist()
    assert rows["chars_on_wire"].iloc[0] == rows["chars_in"].iloc[0]
    delta = ModelRequest("You add.", [a.Message("tool", "5", tool_call_id="call_resp_0001_0")])
    delta.tools = [add.spec]
    assert (
        rows["chars_on_wire"].iloc[1] == len(a.canonical_request(delta)) < rows["chars_in"].iloc[1]
    )
    states = [
        e for s in result.spans for e in s.attrs.get("events", []) if e["event"] == "server_state"
    ]
    assert [
        (e["previous_response_id"], e["messages_kept"], e["messages_sent"]) for e in states
    ] == [
        (None, 0, 1),
        ("resp_0001", 2, 1),
    ]
    assert "chars on the wire after resp_0001" in result_text(result)


def test_streaming_yields_text_and_argument_deltas_then_the_same_response():
    script = a.ScriptedModel(
        [a.tool_call("add", x=20, y=30), a.say("The sum is fifty."), a.tool_call("add", x=1, y=2)]
    )
    with ResponsesServer(script) as server:
        model = responses_model(server.url, conversation="server")
        events = list(a.stream_sync(a.Agent("calc", "You add.", model, [add]), "20+30?"))
        request = ModelRequest("You add.", [a.Message.user("again")], [add.spec])

        async def collect() -> list[Any]:
            return [item async for item in model.stream(request)]

        items = asyncio.run(collect())

    result = events[-1].result
    assert result.ok and result.output == "The sum is fifty."
    text = [e.text for e in events if isinstance(e, a.TextDelta)]
    assert text == ["The sum ", "is fifty", "."]
    pieces = [e for e in events if isinstance(e, a.ToolCallDelta)]
    assert (pieces[0].name, pieces[0].call_id) == ("add", "call_resp_0001_0")
    assert "".join(p.arguments for p in pieces) == '{"x":20,"y":30}' and len(pieces) == 3
    assert all(body["stream"] is True for body in server.received)
    assert server.received[1]["previous_response_id"] == "resp_0001"
    assert "previous_response_id" not in server.received[2]  # a new conversation
    chunks = [i for i in items if isinstance(i, ToolCallChunk)]
    assert chunks[0] == ToolCallChunk(0, "add", "", "call_resp_0003_0")
    assert "".join(c.arguments for c in chunks) == '{"x":1,"y":2}' and len(chunks) == 3
    assert not any(isinstance(i, TextChunk) for i in items)
    response = items[-1]
    assert response.tool_calls == [a.ToolCall("add", '{"x":1,"y":2}', "call_resp_0003_0")]
    assert response.usage.input_tokens is not None and response.stop_reason == "tool_calls"
    assert result.calls["chars_on_wire"].iloc[1] < result.calls["chars_in"].iloc[1]


def test_structured_output_is_asked_for_with_text_format():
    script = a.ScriptedModel([a.say('{"risk": "high", "score": 7}')])
    with ResponsesServer(script) as server:
        agent = a.Agent("judge", "Judge.", responses_model(server.url), output_type=Verdict)
        result = a.run_sync(agent, "Clause 4?")

    assert result.ok and result.output == Verdict(risk="high", score=7)
    fmt = server.received[0]["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["name"] == "verdict"
    assert fmt["schema"]["properties"].keys() == {"risk", "score"}
    assert script.requests[0].output_schema is not None  # the server handed the schema on


def test_hosted_tools_and_reasoning_items_are_kept_and_traced_not_run():
    script = a.ScriptedModel([a.say("Rates rose in May.")] * 2)
    with ResponsesServer(script, reasoning=True) as server:
        tools = [
            a.HostedTool("web_search"),
            a.HostedTool("code_interpreter", container={"type": "auto"}),
        ]
        model = responses_model(server.url, tools=tools)
        result = a.run_sync(a.Agent("research", "Search.", model), "What happened to rates?")
        streamed = list(
            a.stream_sync(a.Agent("research", "Search.", model), "What happened to rates?")
        )

    assert result.ok and result.output == "Rates rose in May."
    assert server.received[0]["tools"] == [
        {"type": "web_search"},
        {"type": "code_interpreter", "container": {"type": "auto"}},
    ]
    timed, *events = next(s for s in result.spans if s.kind == "model_call").attrs["events"]
    assert timed["event"] == "first_byte"  # the client's own timing first, then the reply's
    kinds = [(e["event"], e.get("type")) for e in events]
    assert kinds == [
        ("reasoning", None),
        ("hosted_tool", "web_search_call"),
        ("hosted_tool", "code_interpreter_call"),
    ]
    assert events[0]["summary"] == "Thought about the request."
    assert events[1]["action"] == {"type": "search", "query": "What happened to rates?"}
    assert events[2]["outputs"] == [{"type": "logs", "logs": "2"}]
    assert result.calls["tokens_out_reasoning"].iloc[0] == 4
    streamed_call = next(s for s in streamed[-1].result.spans if s.kind == "model_call")
    assert [
        {**e, "id": None} for e in streamed_call.attrs["events"][1:]
    ] == [  # the same, read off the stream
        {**e, "id": None} for e in events
    ]
    logged = [json.loads(line)["event"] for line in result.log_lines()]
    assert {"model_reasoning", "model_hosted_tool"} <= set(logged)
    assert "web_search_call · code_interpreter_call" in result_text(result)
    assert script.requests[0].tools == []  # the model stand-in never saw a hosted tool as its own


def test_hosted_tool_and_model_arguments_are_checked_at_construction():
    with pytest.raises(a.UserError, match="Responses API tool type"):
        a.HostedTool("web search")
    with pytest.raises(a.UserError, match="Python function"):
        a.HostedTool("function")
    with pytest.raises(a.UserError, match="list of HostedTool.*Agent\\(tools"):
        a.OpenAIResponsesModel("m", base_url="http://127.0.0.1:1/v1", tools=[add])  # type: ignore[list-item]
    with pytest.raises(a.UserError, match="conversation"):
        a.OpenAIResponsesModel("m", base_url="http://127.0.0.1:1/v1", conversation="both")  # type: ignore[arg-type]
    assert repr(a.HostedTool("file_search", vector_store_ids=["vs_1"])) == (
        "HostedTool('file_search', vector_store_ids=['vs_1'])"
    )


def test_sub_agents_keep_their_own_chains():
    def reply(request: ModelRequest) -> Any:
        if request.system == "You coordinate." and not request.tool_results:
            return a.tool_call("legal", input="clause 4")
        return a.say(f"{request.system.split()[1]} done")

    with ResponsesServer(a.ScriptedModel(reply)) as server:
        model = responses_model(server.url, conversation="server")
        legal = a.Agent("legal", "You review.", model)
        coordinator = a.Agent("coordinator", "You coordinate.", model, [legal.as_tool()])
        result = a.run_sync(coordinator, "Review the contract.")

    assert result.ok, result.error
    first, sub, last = server.received
    assert sub["instructions"] == "You review." and "previous_response_id" not in sub
    assert [i.get("content") for i in sub["input"]] == ["clause 4"]
    assert last["instructions"] == "You coordinate."
    assert last["previous_response_id"] == "resp_0001"  # its own chain, not legal's resp_0002
    assert [i["type"] for i in last["input"]] == ["function_call_output"]
    assert last["input"][0]["output"] == "review. done"


def test_a_handoff_with_the_whole_history_continues_the_source_chain():
    def reply(request: ModelRequest) -> Any:
        if request.system == "Route.":
            return a.tool_call("transfer_to_billing")
        return a.say("Billing here.")

    with ResponsesServer(a.ScriptedModel(reply)) as server:
        model = responses_model(server.url, conversation="server")
        billing = a.Agent("billing", "You bill.", model)
        triage = a.Agent("triage", "Route.", model, handoffs=[billing])
        result = a.run_sync(triage, "My invoice is wrong.")

    assert result.ok and result.output == "Billing here.", result.error
    first, second = server.received
    assert second["instructions"] == "You bill."  # instructions are never carried over
    assert second["previous_response_id"] == "resp_0001"
    assert [i["type"] for i in second["input"]] == ["function_call_output"]


class StubResponses(StubServer):
    """A scripted Responses API server that can fail on purpose (tests/_stub_server.py)."""

    route = "/v1/responses"
    prefix = "/v1"

    def error_reply(self, status: int, message: str) -> Reply:
        return error(status, message)


def error(status: int, message: str) -> Reply:
    return Reply(status, {"error": {"message": message, "type": "test_error", "code": None}})


def reply(rid: str, text: str | None = None, calls: tuple[tuple[str, str], ...] = ()) -> dict:
    output: list[dict[str, Any]] = []
    if text is not None:
        part = {"type": "output_text", "text": text, "annotations": []}
        output.append({"type": "message", "id": "m", "role": "assistant", "content": [part]})
    for call_id, name in calls:
        output.append(
            {
                "type": "function_call",
                "id": "f",
                "call_id": call_id,
                "name": name,
                "arguments": '{"x":1,"y":2}',
            }
        )
    usage = {"input_tokens": 100, "output_tokens": 5}
    return {
        "id": rid,
        "object": "response",
        "status": "completed",
        "output": output,
        "usage": usage,
    }


def test_a_retry_resends_the_same_delta_after_the_same_response():
    script = [
        reply("resp_A", calls=(("c1", "add"),)),
        error(503, "busy"),
        reply("resp_B", "3"),
    ]
    with StubResponses(script) as server:
        model = responses_model(server.url, conversation="server")
        result = a.run_sync(a.Agent("calc", "You add.", model, [add]), "1+2?")

    assert result.ok and result.output == "3", result.error
    first, failed, retried = server.bodies
    assert failed == retried
    assert retried["previous_response_id"] == "resp_A"
    assert retried["input"] == [{"type": "function_call_output", "call_id": "c1", "output": "3"}]
    assert result.calls["retries"].tolist() == [0, 1]
    assert result.calls["provider_tokens_in"].tolist() == [100, 100]
    assert result.calls["chars_on_wire"].iloc[1] < result.calls["chars_in"].iloc[1]


def test_a_forgotten_response_is_answered_by_sending_the_whole_history():
    script = [
        reply("resp_A", calls=(("c1", "add"),)),
        error(400, "Previous response with id 'resp_A' not found."),
        reply("resp_B", "3"),
    ]
    with StubResponses(script) as server:
        model = responses_model(server.url, conversation="server")
        result = a.run_sync(a.Agent("calc", "You add.", model, [add]), "1+2?")

    assert result.ok and result.output == "3", result.error
    _, lost, whole = server.bodies
    assert lost["previous_response_id"] == "resp_A" and "previous_response_id" not in whole
    assert [i.get("type", "message") for i in whole["input"]] == [
        "message",
        "function_call",
        "function_call_output",
    ]
    assert result.calls["chars_on_wire"].iloc[1] == result.calls["chars_in"].iloc[1]
    logged = [json.loads(line)["event"] for line in result.log_lines()]
    assert "model_server_state_lost" in logged
    states = [e for s in result.spans for e in s.attrs.get("events", []) if "chars_on_wire" in e]
    assert [e["previous_response_id"] for e in states] == [None, None]  # what went, in the end
    assert "on the wire after" not in result_text(result)


def test_a_failed_response_is_an_error_not_an_answer():
    failed = {**reply("resp_A", "x"), "status": "failed", "error": {"message": "it broke"}}
    with StubResponses([failed]) as server:
        result = a.run_sync(a.Agent("calc", "You add.", responses_model(server.url)), "1+2?")

    assert not result.ok and "it broke" in str(result.error)


def test_record_and_replay_keep_what_was_sent_and_never_the_key(tmp_path):
    with ResponsesServer(adding_script()) as server:
        model = responses_model(server.url, conversation="server")
        recorder = a.record(model, tmp_path / "run.jsonl")
        recorded = a.run_sync(a.Agent("calc", "You add.", recorder, [add]), "2+3?")

    replayed = a.run_sync(
        a.Agent("calc", "You add.", a.replay(tmp_path / "run.jsonl"), [add]), "2+3?"
    )

    assert recorded.ok and replayed.ok and replayed.output == "5"
    columns = ["chars_in", "chars_on_wire", "provider_tokens_in"]
    assert replayed.calls[columns].values.tolist() == recorded.calls[columns].values.tolist()
    assert recorded.calls["chars_on_wire"].iloc[1] < recorded.calls["chars_in"].iloc[1]
    text = (tmp_path / "run.jsonl").read_text()
    assert KEY not in text and KEY[-8:] not in text


def test_the_key_is_scrubbed_from_errors_reprs_and_pickles():
    leaky = f"Incorrect API key provided: {KEY}."
    with StubResponses([error(401, leaky)]) as server:
        model = responses_model(server.url)
        result = a.run_sync(a.Agent("calc", "You add.", model), "1+2?")

    assert server.headers[0]["authorization"] == f"Bearer {KEY}"
    shown = "\n".join(
        [repr(model), repr(vars(model)), str(result.error), repr(result), *result.log_lines()]
    )
    assert KEY not in shown and "HTTP 401" in str(result.error)
    assert repr(model) == f"OpenAIResponsesModel('fake-model', base_url='{server.url}')"
    copy = pickle.loads(pickle.dumps(model))
    assert KEY not in repr(vars(copy)) and len(copy._chains) == 0


def test_the_spec_string_and_settings(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    model = model_from_spec("openai-responses:gpt-4o-mini")
    assert isinstance(model, a.OpenAIResponsesModel) and model.model == "gpt-4o-mini"
    assert model.conversation == "client"

    script = a.ScriptedModel([a.say("ok")])
    with ResponsesServer(script) as server:
        settings = a.ModelSettings(temperature=0.2, max_tokens=50, tool_choice="add")
        model = responses_model(server.url, params={"reasoning": {"effort": "low"}})
        agent = a.Agent("calc", "You add.", model, [add], model_settings=settings)
        ok = a.run_sync(agent, "1+2?")
        seeded = a.Agent(
            "calc", "x", responses_model(server.url), model_settings=a.ModelSettings(seed=1)
        )
        refused = a.run_sync(seeded, "hi")

    body = server.received[0]
    assert ok.ok and (body["temperature"], body["max_output_tokens"]) == (0.2, 50)
    assert body["tool_choice"] == {"type": "function", "name": "add"}
    assert body["reasoning"] == {"effort": "low"}  # params go into the body as they are
    assert not refused.ok and "seed" in str(refused.error) and len(server.received) == 1


def streamed(body: dict[str, Any]) -> Streamed:
    """A reply as the API streams it (the events `ResponsesServer` sends)."""
    return Streamed([sse(event, event["type"]) for event in stream_events(body)])


def test_a_stream_that_fails_before_its_first_delta_is_retried_one_broken_after_is_not():
    error_event = sse({"type": "error", "code": "server_error", "message": "overloaded"}, "error")
    good = streamed(reply("resp_A", "Hello there, friend."))
    with StubResponses([Streamed([error_event]), good, good.cut(3)]) as server:
        model = responses_model(server.url)
        events = list(a.stream_sync(a.Agent("w", "Greet.", model), "hi"))
        broken = list(a.stream_sync(a.Agent("w", "Greet.", model), "hi"))

    result = events[-1].result
    assert result.ok and result.output == "Hello there, friend.", result.error
    assert result.calls["retries"].tolist() == [1] and len(server.bodies) == 3
    assert server.bodies[0] == server.bodies[1]
    failed = broken[-1].result
    assert not failed.ok and isinstance(failed.error, a.StreamBroken)
    assert "response.completed" in str(failed.error)


def test_a_handoff_with_a_filtered_history_starts_a_new_chain():
    def reply(request: ModelRequest) -> Any:
        if request.system == "Route.":
            return a.tool_call("transfer_to_billing")
        return a.say("Billing here.")

    with ResponsesServer(a.ScriptedModel(reply)) as server:
        model = responses_model(server.url, conversation="server")
        billing = a.Agent("billing", "You bill.", model)
        only_intent = a.Handoff(billing, config=a.HandoffConfig(strategy="intent_only"))
        triage = a.Agent("triage", "Route.", model, handoffs=[only_intent])
        result = a.run_sync(triage, "My invoice is wrong.")

    assert result.ok, result.error
    second = server.received[1]
    assert "previous_response_id" not in second  # what it was given is not a stored conversation
    assert result.calls["chars_on_wire"].tolist() == result.calls["chars_in"].tolist()


def test_chains_continue_the_longest_remembered_conversation_and_forget_the_oldest():
    from agentnb.models.providers.openai_responses import state

    user, other = a.Message.user("hi"), a.Message.user("other")
    chains = state.ResponseChains()
    first = a.ModelResponse(tool_calls=[a.ToolCall("add", "{}", "c1")])
    chains.remember([user], first, "resp_1")
    turn = [user, a.Message.assistant(None, (a.ToolCall("add", "{}", "c1"),))]
    tool = a.Message("tool", "3", tool_call_id="c1")
    chains.remember([*turn, tool], a.ModelResponse(text="3"), "resp_2")

    assert chains.continuation([user]) == state.Continuation(None, 0)
    assert chains.continuation([*turn, tool]) == state.Continuation("resp_1", 2)
    later = [*turn, tool, a.Message.assistant("3"), a.Message.user("and 4?")]
    assert chains.continuation(later) == state.Continuation("resp_2", 4)
    changed = [user, a.Message.assistant(None, (a.ToolCall("add", '{"x":1}', "c1"),)), tool]
    assert chains.continuation(changed) == state.Continuation(None, 0)  # not what the server has
    assert chains.continuation([other, *turn[1:]]) == state.Continuation(None, 0)

    chains.forget("resp_1")
    assert chains.continuation([*turn, tool]) == state.Continuation(None, 0)
    for i in range(state.MAX_CHAINS + 1):
        chains.remember([a.Message.user(str(i))], a.ModelResponse(text="x"), f"r{i}")
    assert len(chains) == state.MAX_CHAINS
    assert chains.continuation(later) == state.Continuation(None, 0)  # resp_2 was the oldest


def test_incomplete_refused_and_unknown_output_read_as_the_other_adapters_do():
    from agentnb.models.http.sse import attrs
    from agentnb.models.providers.openai_responses.wire import response_from_wire

    cut = {**reply("resp_A", "Half an ans"), "status": "incomplete"}
    cut["incomplete_details"] = {"reason": "max_output_tokens"}
    response, rid = response_from_wire(attrs(cut))
    assert (response.text, response.stop_reason, rid) == ("Half an ans", "length", "resp_A")

    refused = reply("resp_B")
    part = {"type": "refusal", "refusal": "I can't help with that."}
    refused["output"] = [{"type": "message", "content": [part]}, {"type": "image_generation_x"}]
    response, _ = response_from_wire(attrs(refused))
    assert response.text == "I can't help with that."
    assert response.events == [
        {"event": "refusal"},
        {"event": "output_item", "type": "image_generation_x"},
    ]


def test_the_conversation_fields_are_the_model_s_and_other_params_are_defaults():
    with pytest.raises(a.UserError, match="cannot set 'store'.*conversation"):
        a.OpenAIResponsesModel("m", base_url="http://127.0.0.1:1/v1", params={"store": True})
    with pytest.raises(a.UserError, match="cannot set 'input'"):  # as for every adapter
        a.OpenAIResponsesModel("m", base_url="http://127.0.0.1:1/v1", params={"input": []})

    script = a.ScriptedModel([a.say("Short."), a.say('{"risk": "low", "score": 1}')])
    with ResponsesServer(script) as server:
        model = responses_model(server.url, params={"text": {"verbosity": "low"}})
        plain = a.run_sync(a.Agent("w", "Write.", model), "hi")
        typed = a.run_sync(a.Agent("j", "Judge.", model, output_type=Verdict), "hi")
        chained = a.ModelSettings(extra={"previous_response_id": "resp_9"})
        refused = a.run_sync(a.Agent("w", "Write.", model, model_settings=chained), "hi")

    assert plain.ok and typed.ok and typed.output == Verdict(risk="low", score=1)
    first, second = server.received
    assert first["text"] == {"verbosity": "low"}  # a default where agentnb sets nothing
    assert second["text"]["format"]["type"] == "json_schema"  # the output type wins
    assert not refused.ok and "previous_response_id" in str(refused.error)
    assert len(server.received) == 2  # refused before anything was sent

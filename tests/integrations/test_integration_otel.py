"""agentnb.integrations.otel: GenAI spans in (pydantic-ai, offline) and agentnb runs out."""

from __future__ import annotations

import itertools
import json

import pytest

pytest.importorskip("opentelemetry.sdk")

from fake_openai_server import FakeOpenAIServer, completion  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

import agentnb  # noqa: E402
from agentnb.integrations import otel  # noqa: E402
from agentnb.models.types import Message, ModelRequest, ToolCall, ToolSpec  # noqa: E402
from agentnb.trace import CALL_COLUMNS, canonical_request  # noqa: E402

CLAUSE = "The supplier guarantees 100% availability of the service."
KEY = "sk-agentnb-otel-secret-0123456789"


def pydantic_ai_pair(provider: TracerProvider, content: bool = True):
    """A coordinator (FunctionModel) that asks a legal sub-agent (TestModel) in a tool."""
    pai = pytest.importorskip("pydantic_ai")
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.test import TestModel

    settings = InstrumentationSettings(tracer_provider=provider, include_content=content)
    seen: list[list] = []
    legal = pai.Agent(
        TestModel(custom_output_text="Needs changes."),
        name="legal",
        instructions="You review clauses.",
        capabilities=[Instrumentation(settings=settings)],
    )

    def script(messages, info):
        seen.append(list(messages))
        if len(messages) == 1:
            call = ToolCallPart("legal_opinion", {"clause": CLAUSE}, tool_call_id="c1")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart("Synthesis: needs changes.")])

    coordinator = pai.Agent(
        FunctionModel(script),
        name="coordinator",
        instructions="Ask legal.",
        capabilities=[Instrumentation(settings=settings)],
    )

    @coordinator.tool
    async def legal_opinion(ctx, clause: str) -> str:
        """Legal opinion on a clause."""
        result = await legal.run(clause, usage=ctx.usage)
        return result.output

    return coordinator, seen


async def test_pydantic_ai_spans_become_attributed_calls():
    provider = TracerProvider()
    coordinator, seen = pydantic_ai_pair(provider)
    with otel.capture(provider) as cap:
        result = await coordinator.run(f"Review: {CLAUSE}")
    assert result.output == "Synthesis: needs changes."
    assert len(seen) == 2  # the coordinator's model was called twice
    calls = cap.calls
    assert list(calls.columns) == list(CALL_COLUMNS)
    assert calls["path"].tolist() == ["coordinator", "coordinator/legal", "coordinator"]
    assert calls["depth"].tolist() == [0, 1, 0]
    assert calls["turn"].tolist() == [1, 1, 2]
    assert calls["run_id"].nunique() == 1
    # characters from the recorded messages, by agentnb's rule
    spec = ToolSpec(
        "legal_opinion",
        "Legal opinion on a clause.",
        {
            "additionalProperties": False,
            "properties": {"clause": {"type": "string"}},
            "required": ["clause"],
            "type": "object",
        },
    )
    call = ToolCall("legal_opinion", json.dumps({"clause": CLAUSE}, separators=(",", ":")), "c1")
    second = ModelRequest(
        "Ask legal.",
        [
            Message.user(f"Review: {CLAUSE}"),
            Message.assistant(None, (call,)),
            Message.tool(call, "Needs changes."),
        ],
        [spec],
    )
    assert calls["chars_in"].iloc[2] == len(canonical_request(second))
    assert calls["chars_in_tool_results"].tolist() == [0, 0, len("Needs changes.")]
    assert calls["chars_in_user"].iloc[1] == len(CLAUSE)
    # the framework's own usage beside agentnb's counts
    assert calls["provider_tokens_in"].notna().all()
    spans = {s.span_id: s for s in cap.runs[0].spans}
    legal_row = calls.iloc[1]
    agent_span = spans[legal_row["parent_id"]]
    assert (agent_span.kind, spans[agent_span.parent_id].kind) == ("agent", "tool_call")
    assert "coordinator/legal" in cap._repr_html_()
    assert agentnb.breakdown(cap.runs)["model_calls"].iloc[0] == 3


async def test_without_message_contents_only_usage_is_measured():
    provider = TracerProvider()
    coordinator, _ = pydantic_ai_pair(provider, content=False)
    with otel.capture(provider) as cap:
        await coordinator.run(f"Review: {CLAUSE}")
    calls = cap.calls
    assert calls["chars_in"].isna().all()
    assert (calls["tokens_method"] == "provider").all()
    assert calls["tokens_in"].tolist() == calls["provider_tokens_in"].tolist()
    reasons = {s.attrs.get("chars_in_reason") for s in cap.runs[0].spans if s.kind == "model_call"}
    assert reasons == {otel.NO_CONTENT}


def test_capture_keeps_only_the_block_and_nests():
    provider = TracerProvider()
    tracer = provider.get_tracer("t")
    tracer.start_span("before").end()
    with otel.capture(provider) as outer:
        tracer.start_span("chat m", attributes={"gen_ai.operation.name": "chat"}).end()
        with otel.capture(provider) as inner:
            tracer.start_span("inside").end()
    tracer.start_span("after").end()
    assert [s.name for s in outer.spans] == ["chat m", "inside"]
    assert [s.name for s in inner.spans] == ["inside"]
    assert outer.calls["chars_in"].isna().all() and len(outer.calls) == 1


def _exported(result) -> list:
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    otel.export(result, tracer_provider=provider)
    return list(memory.get_finished_spans())


def test_export_a_native_run_as_genai_spans(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAIServer() as server:
        server.script = [
            completion(tool_calls=[("legal", {"input": CLAUSE})], prompt_tokens=40),
            completion("Synthesis.", prompt_tokens=90, completion_tokens=3),
        ]
        model = agentnb.OpenAIModel("fake-model", base_url=server.url, api_key=KEY)
        legal = agentnb.Agent(
            "legal", "You review clauses.", agentnb.ScriptedModel([agentnb.say("Needs changes.")])
        )
        coordinator = agentnb.Agent("coordinator", "Ask legal.", model, [legal.as_tool()])
        result = agentnb.run_sync(coordinator, CLAUSE)
    assert result.ok, result.error
    spans = _exported(result)
    native = result.spans
    assert len(spans) == len(native)
    by_name = {s.name: s for s in spans}
    ops = sorted(s.attributes["gen_ai.operation.name"] for s in spans)
    assert ops.count("chat") == 3 and ops.count("execute_tool") == 1
    assert ops.count("invoke_agent") == 2
    tool = by_name["execute_tool legal"]
    sub = by_name["invoke_agent legal"]
    assert sub.parent.span_id == tool.context.span_id
    coordinator_agent = by_name["invoke_agent coordinator"]
    assert tool.parent.span_id == coordinator_agent.context.span_id
    chats = [s for s in spans if s.attributes["gen_ai.operation.name"] == "chat"]
    rows = result.calls.set_index("span_id")
    for chat in chats:
        row = rows.loc[chat.attributes["agentnb.span_id"]]
        assert chat.attributes["agentnb.chars_in"] == row["chars_in"]
        assert chat.attributes["agentnb.chars_in_system"] == row["chars_in_system"]
        assert chat.start_time <= chat.end_time
    usage = sorted(s.attributes.get("gen_ai.usage.input_tokens", -1) for s in chats)
    assert usage == [-1, 40, 90]  # the scripted sub-agent reports none
    text = json.dumps([(s.name, dict(s.attributes)) for s in spans], default=str)
    assert KEY not in text and "sk-agentnb" not in text


async def test_export_a_captured_openai_agents_run():
    pytest.importorskip("agents")
    from agents import Runner, set_tracing_disabled

    set_tracing_disabled(True)

    from agentnb.integrations import article, openai_agents

    with openai_agents.capture() as cap:
        await Runner.run(article.coordinator(2, itertools.count()), article.CLAUSE)
    spans = _exported(cap)
    kinds = sorted(s.attributes["gen_ai.operation.name"] for s in spans)
    assert kinds == sorted(
        ["invoke_workflow", "invoke_agent", "invoke_agent", "invoke_agent", "chat", "chat"]
        + ["chat", "chat", "execute_tool", "execute_tool"]
    )
    ids = {s.context.span_id for s in spans}
    roots = [s for s in spans if s.parent is None]
    assert len(roots) == 1 and all(s.parent.span_id in ids for s in spans if s.parent)


def test_export_rejects_what_is_not_a_run():
    with pytest.raises(agentnb.UserError, match="export takes a RunResult"):
        otel.export("not a run", tracer_provider=TracerProvider())


def test_capture_on_the_global_provider_sets_one_when_there_is_none():
    """In a fresh process (the global provider can be set only once per process)."""
    import subprocess
    import sys

    code = """
from opentelemetry import trace
from agentnb.integrations import otel
with otel.capture() as cap:
    span = trace.get_tracer("t").start_span("chat m", attributes={"gen_ai.operation.name": "chat",
        "gen_ai.usage.input_tokens": 7, "gen_ai.agent.name": "solo"})
    span.end()
print(len(cap.spans), cap.calls["provider_tokens_in"].tolist(), cap.calls["agent"].tolist())
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "1 [7] ['solo']"


async def test_tokens_are_counted_on_the_recorded_messages(word_tokenizer):
    provider = TracerProvider()
    coordinator, _ = pydantic_ai_pair(provider)
    with otel.capture(provider) as cap:
        await coordinator.run(f"Review: {CLAUSE}")
    calls = cap.calls
    assert (calls["tokens_method"] == "words").all()
    assert calls["provider_tokens_in"].notna().all()  # the framework's own count, beside
    assert f"Review: {CLAUSE}" in word_tokenizer and "You review clauses." in word_tokenizer
    legal = calls.iloc[1]
    assert legal["tokens_in"] == 3 + len(CLAUSE.split())  # "You review clauses." and the clause


def _fake_span(span_id: int, name: str = "chat fake-model", **attributes: object) -> object:
    from types import SimpleNamespace

    return SimpleNamespace(
        name=name,
        context=SimpleNamespace(span_id=span_id, trace_id=7),
        parent=None,
        start_time=span_id * 1_000,
        end_time=span_id * 1_000 + 500,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "fake-model",
            "gen_ai.usage.input_tokens": 10 * span_id,
            "gen_ai.usage.output_tokens": 2,
            **attributes,
        },
        status=None,
        events=(),
    )


@pytest.mark.parametrize(
    "broken",
    [
        object(),  # nothing a span has
        _fake_span(2, **{"gen_ai.input.messages": '[{"role": "user", "parts": 5}]'}),
        _fake_span(2, **{"gen_ai.usage.input_tokens": object()}),
        type("Odd", (), {"name": "odd", "context": None, "attributes": {}})(),
    ],
    ids=["not-a-span", "parts-not-a-list", "usage-not-a-number", "no-context"],
)
def test_a_malformed_span_is_skipped_with_a_warning_and_the_rest_kept(broken):
    from agentnb.integrations.otel import calls_from_spans

    spans = [_fake_span(1), broken, _fake_span(3)]

    with pytest.warns(UserWarning, match=r"1 span\(s\) could not be read and were skipped"):
        calls = calls_from_spans(spans)

    assert list(calls["provider_tokens_in"]) == [10, 30]
    assert list(calls["model"]) == ["fake-model", "fake-model"]

"""agentnb.integrations.openai_agents: openai-agents runs measured without changing them."""

from __future__ import annotations

import itertools
import json

import pytest

pytest.importorskip("agents")

from agents import Agent, Runner, function_tool, handoff, set_tracing_disabled  # noqa: E402
from agents.run_internal import run_loop  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402
from agents.usage import Usage as SdkUsage  # noqa: E402

import agentnb  # noqa: E402
from agentnb.errors import UserError  # noqa: E402
from agentnb.integrations import _sdk_items, _sdk_patch, article, openai_agents  # noqa: E402
from agentnb.models.types import Message, ModelRequest, ToolCall, ToolSpec  # noqa: E402
from agentnb.trace import CALL_COLUMNS, canonical_request  # noqa: E402

set_tracing_disabled(True)  # as the article's listings run: the capture must not need it


async def test_article_count_reproduces_the_published_table():
    table = await article.cost_table("article")
    assert table["chars_in"].tolist() == [1119, 5434, 8634, 11834, 18237]
    assert [f"{m:.1f}" for m in table["multiplier"][1:]] == ["4.9", "7.7", "10.6", "16.3"]
    assert table["run_id"].nunique() == 5


async def test_article_rule_is_what_the_model_was_handed():
    ids = itertools.count()
    agent = article.coordinator(2, ids)
    with openai_agents.capture("article") as cap:
        await Runner.run(agent, article.CLAUSE)
    received = agent.model.calls  # type: ignore[union-attr]
    tools = agent.tools
    specs = [(t.name, t.description, t.params_json_schema) for t in tools]  # type: ignore[union-attr]
    expected = [
        len(article.COORDINATOR) + len(json.dumps(c["input"])) + len(json.dumps(specs))
        for c in received
    ]
    rows = cap.calls[cap.calls["agent"] == "Coordinator"]
    assert rows["chars_in"].tolist() == expected
    # the second turn reread both tool calls (ids fc_0, fc_1) and both opinions
    second = received[1]["input"]
    assert [i.get("call_id") for i in second if i.get("type") == "function_call"] == [
        "call_0",
        "call_1",
    ]
    components = [c for c in CALL_COLUMNS if c.startswith("chars_in_")]
    assert (cap.calls[components].sum(axis=1) == cap.calls["chars_in"]).all()


async def test_agentnb_count_is_agentnb_canonical_json_of_what_the_sdk_sent():
    ids = itertools.count()
    agent = article.coordinator(1, ids)
    with openai_agents.capture() as cap:
        await Runner.run(agent, article.CLAUSE)
    calls = cap.calls
    assert list(calls.columns) == list(CALL_COLUMNS)
    tool = agent.tools[0]
    spec = ToolSpec(tool.name, tool.description, tool.params_json_schema)  # type: ignore[union-attr]
    call = ToolCall("opinion_0", json.dumps({"input": article.CLAUSE}), "call_0")
    second = ModelRequest(
        article.COORDINATOR,
        [
            Message.user(article.CLAUSE),
            Message.assistant(None, (call,)),
            Message.tool(call, article.OPINION),
        ],
        [spec],
    )
    coordinator = calls[calls["agent"] == "Coordinator"]
    assert coordinator["chars_in"].tolist()[1] == len(canonical_request(second))
    reviewer = calls[calls["agent"] == "Reviewer 0"].iloc[0]
    first = ModelRequest(article.REVIEWER, [Message.user(article.CLAUSE)], [])
    assert reviewer["chars_in"] == len(canonical_request(first))
    assert reviewer["chars_in_user"] == len(article.CLAUSE)
    assert coordinator["chars_in_tool_results"].tolist() == [0, len(article.OPINION)]


async def test_hierarchy_runs_and_spans_are_attributed():
    ids = itertools.count()
    with openai_agents.capture() as cap:
        await Runner.run(article.coordinator(2, ids), article.CLAUSE)
        await Runner.run(article.generalist(ids), article.CLAUSE)
    assert len(cap.runs) == 2 and cap.runs[0].run_id != cap.runs[1].run_id
    calls = cap.calls
    first = calls[calls["run_id"] == cap.runs[0].run_id]
    assert first["path"].tolist() == [
        "Coordinator",
        "Coordinator/Reviewer 0",
        "Coordinator/Reviewer 1",
        "Coordinator",
    ]
    assert first["depth"].tolist() == [0, 1, 1, 0]
    assert first["turn"].tolist() == [1, 1, 1, 2]
    spans = {s.span_id: s for s in cap.runs[0].spans}
    for row in first[first["depth"] == 1].itertuples():
        agent_span = spans[row.parent_id]
        tool_span = spans[agent_span.parent_id]
        assert (agent_span.kind, tool_span.kind) == ("agent", "tool_call")
        assert tool_span.name == f"opinion_{row.agent[-1]}"
    assert all(s.ended is not None and s.status == "ok" for s in cap.spans)
    assert cap.ok and "Coordinator/Reviewer 1" in cap._repr_html_()


async def test_tables_and_plots_take_a_capture():
    with openai_agents.capture() as cap:
        await Runner.run(article.coordinator(2, itertools.count()), article.CLAUSE)
    table = agentnb.breakdown(cap)
    assert table["chars_in"].iloc[0] == cap.calls["chars_in"].sum()
    assert agentnb.cost_table(cap)["model_calls"].iloc[0] == 4
    from agentnb import plot

    fig = plot.timeline(cap)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()][0] == "Coordinator"

    async def one(n: int, mode: str):
        with openai_agents.capture() as inner:
            await Runner.run(article.coordinator(n, itertools.count()), article.CLAUSE)
        return inner

    frame = await agentnb.sweep(one, {"n": [1, 2], "mode": ["as_tool"]}, progress=False)
    series = agentnb.latency_series(frame)
    assert series["model_calls"].tolist() == [3, 4]


@pytest.fixture
def sdk_default_loop():
    """``Runner.run_sync`` leaves the loop it made open on purpose (openai-agents reuses it):
    close it after the test, as a process that ends would."""
    yield
    import asyncio
    import warnings

    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        loop = policy.get_event_loop()
    if not loop.is_closed() and not loop.is_running():
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    policy.set_event_loop(None)


def test_run_sync_is_measured(sdk_default_loop):
    model = ScriptedModel([[assistant_message("Done.")]], default_usage=None)
    agent = Agent(name="solo", instructions="Answer.", model=model)
    with openai_agents.capture() as cap:
        Runner.run_sync(agent, "hello")
    assert cap.calls["chars_in_user"].tolist() == [5]


async def test_run_streamed_is_measured():
    usage = SdkUsage(requests=1, input_tokens=7, output_tokens=3, total_tokens=10)
    model = ScriptedModel([{"output": [assistant_message("Streamed.")], "usage": usage}])
    streamer = Agent(name="streamer", instructions="Answer.", model=model)
    with openai_agents.capture() as cap:
        result = Runner.run_streamed(streamer, "hi")
        async for _ in result.stream_events():
            pass
    row = cap.calls.iloc[0]
    assert (row["agent"], row["chars_out"], row["provider_tokens_in"]) == ("streamer", 9, 7)
    assert 0 <= row["ttft_s"] <= row["latency_s"]  # the stream's first text delta
    assert model.calls[0].input == [{"content": "hi", "role": "user"}]


async def test_handoffs_tools_and_provider_usage():
    @function_tool
    def clause_length(text: str) -> int:
        """Count the characters of a clause."""
        return len(text)

    tax = Agent(
        name="tax",
        instructions="Tax view.",
        model=ScriptedModel(
            [
                {
                    "output": [assistant_message("Fine.")],
                    "usage": SdkUsage(
                        requests=1, input_tokens=40, output_tokens=2, total_tokens=42
                    ),
                }
            ]
        ),
    )
    triage_model = ScriptedModel(
        [
            [function_call("clause_length", {"text": "abc"}, call_id="c1")],
            [function_call("transfer_to_tax", {}, call_id="c2")],
        ]
    )
    triage = Agent(
        name="triage",
        instructions="Route.",
        model=triage_model,
        tools=[clause_length],
        handoffs=[handoff(tax)],
    )
    with openai_agents.capture() as cap:
        result = await Runner.run(triage, "a clause")
    assert result.final_output == "Fine."
    calls = cap.calls
    assert calls["agent"].tolist() == ["triage", "triage", "tax"]
    assert calls["chars_in_tool_results"].tolist()[1] == 1  # "3"
    assert calls["provider_tokens_in"].tolist()[2] == 40
    spans = [s for s in cap.spans if s.kind == "tool_call"]
    assert [s.name for s in spans] == ["clause_length"]
    # the handoff is a tool spec the model saw
    sent = triage_model.calls[0]
    names = [t.name for t in sent.tools] + [h.tool_name for h in sent.handoffs]
    assert "transfer_to_tax" in names
    assert calls["chars_in_tools"].iloc[0] > len("transfer_to_tax")


async def test_a_failing_run_is_kept_and_the_error_raised():
    model = ScriptedModel([RuntimeError("model down")])
    agent = Agent(name="broken", instructions="x", model=model)
    with openai_agents.capture() as cap, pytest.raises(RuntimeError, match="model down"):
        await Runner.run(agent, "hi")
    assert not cap.ok and isinstance(cap.error, RuntimeError)
    assert cap.calls["status"].tolist() == ["error"]


def test_history_is_converted_once_per_item():
    history = _sdk_items.ItemHistory()
    items: list[dict[str, object]] = [{"content": "hi", "role": "user"}]
    history.update(items, article=False)
    first = history.messages[0]
    for n in range(50):
        items = [
            *items,
            {"type": "function_call", "call_id": f"c{n}", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{n}", "output": "ok"},
        ]
        before = len(history.messages)
        history.update(items, article=False)
        assert history.messages[0] is first  # the same objects: their sizes stay cached
        assert len(history.messages) == before + 2
    changed = [{"content": "other", "role": "user"}]
    history.update(changed, article=False)
    assert [m.content for m in history.messages] == ["other"]


def test_capture_restores_the_sdk_when_the_last_one_closes(sdk_default_loop):
    original = run_loop.get_model
    with openai_agents.capture():
        with openai_agents.capture():
            assert run_loop.get_model is not original
        assert run_loop.get_model is not original
    assert run_loop.get_model is original and not _sdk_patch.installed()
    model = ScriptedModel([[assistant_message("x")]])
    Runner.run_sync(Agent(name="a", instructions="i", model=model), "hi")  # not measured: fine


def test_the_wrapped_sdk_names_exist():
    """Fails with the name that moved when an openai-agents release renames a wrapped function."""
    _sdk_patch.check()


def test_a_moved_name_is_a_clear_error(monkeypatch):
    monkeypatch.delattr(run_loop, "get_model")
    with pytest.raises(UserError, match=r"agents\.run_internal\.run_loop\.get_model"):
        _sdk_patch.check()


def test_count_is_checked():
    with pytest.raises(UserError, match="count must be one of 'agentnb', 'article'"):
        openai_agents.capture("tokens")  # type: ignore[arg-type]


async def test_a_long_conversation_is_counted_once_per_new_message(word_tokenizer):
    """Tokens (and sizes) of a 40-turn tool loop: each text is counted once, not once per turn."""

    @function_tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    turns = 40
    steps = [[function_call("lookup", {"key": f"k{i}"}, call_id=f"c{i}")] for i in range(turns)]
    model = ScriptedModel([*steps, [assistant_message("done")]])
    agent = Agent(name="loop", instructions="Look things up.", model=model, tools=[lookup])
    async with openai_agents.capture() as cap:
        await Runner.run(agent, "start", max_turns=turns + 5)
    calls = cap.calls
    assert len(calls) == turns + 1 and (calls["tokens_method"] == "words").all()
    assert calls["tokens_in"].is_monotonic_increasing
    history_texts = [t for t in word_tokenizer if t.startswith(("value of", '{"key"'))]
    # every argument and result was tokenized once (plus each call's output once), not per turn
    assert len(history_texts) <= 3 * turns


async def test_an_item_agentnb_cannot_read_never_breaks_the_run(monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("unreadable item")

    monkeypatch.setattr(_sdk_items.ItemHistory, "update", broken)
    model = ScriptedModel([[assistant_message("Still fine.")]])
    with openai_agents.capture() as cap:
        result = await Runner.run(Agent(name="a", instructions="i", model=model), "hi")
    assert result.final_output == "Still fine."
    row = cap.calls.iloc[0]
    assert row["status"] == "ok" and row["chars_in"] is None
    span = next(s for s in cap.spans if s.kind == "model_call")
    assert span.attrs["chars_in_reason"] == "not measured: ValueError: unreadable item"


async def test_the_models_usage_details_sit_beside_agentnbs_count(word_tokenizer):
    from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

    usage = SdkUsage(
        requests=1,
        input_tokens=30,
        output_tokens=9,
        total_tokens=39,
        input_tokens_details=InputTokensDetails(cached_tokens=12, cache_write_tokens=3),
        output_tokens_details=OutputTokensDetails(reasoning_tokens=4),
    )
    model = ScriptedModel([{"output": [assistant_message("Two words.")], "usage": usage}])
    with openai_agents.capture() as cap:
        await Runner.run(Agent(name="a", instructions="Be brief.", model=model), "one two three")
    row = cap.calls.iloc[0]
    reported = ["provider_tokens_in", "tokens_in_cached", "tokens_in_cache_write"]
    assert row[[*reported, "tokens_out_reasoning"]].tolist() == [30, 12, 3, 4]
    assert (row["tokens_in"], row["tokens_method"]) == (5, "words")  # "Be brief." + 3 words
    assert row["tokens_in_overhead"] == 30 - 5


async def test_concurrent_runs_in_one_capture_stay_apart():
    import asyncio

    ids = itertools.count()
    first, second = article.coordinator(1, ids), article.coordinator(2, ids)
    async with openai_agents.capture() as cap:
        await asyncio.gather(Runner.run(first, article.CLAUSE), Runner.run(second, article.CLAUSE))
    by_run = {run.run_id: run.calls for run in cap.runs}
    assert sorted(len(calls) for calls in by_run.values()) == [3, 4]
    for calls in by_run.values():
        reviewers = calls[calls["depth"] == 1]
        assert len(reviewers) == len(calls) - 2  # each run holds only its own sub-agents
        assert set(calls["run_id"]) == {calls["run_id"].iloc[0]}


async def test_the_runs_own_hooks_are_still_called():
    from agents import RunHooks

    seen: list[str] = []

    class Recorder(RunHooks):
        async def on_agent_start(self, context, agent):
            seen.append(f"start {agent.name}")

        async def on_tool_start(self, context, agent, tool):
            seen.append(f"tool {tool.name}")

        async def on_tool_end(self, context, agent, tool, result):
            seen.append(f"done {tool.name}")

    with openai_agents.capture() as cap:
        await Runner.run(
            article.coordinator(1, itertools.count()), article.CLAUSE, hooks=Recorder()
        )
    assert seen[:2] == ["start Coordinator", "tool opinion_0"]
    assert "done opinion_0" in seen
    assert [s.name for s in cap.spans if s.kind == "tool_call"] == ["opinion_0"]


async def test_a_finished_capture_leaves_no_garbage_for_the_cycle_collector():
    """What a capture builds is freed when the last reference goes, as a plain run's is: no
    reference cycle for the collector to find (each would make the user's later runs slower)."""
    import gc

    agent = article.coordinator(2, itertools.count())
    gc.collect()
    gc.disable()
    try:
        with openai_agents.capture() as cap:
            await Runner.run(agent, article.CLAUSE)
        assert cap.runs[0].model_calls == 4
        del cap
        gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds is kept to be looked at
        gc.collect()
        # agentnb's own objects only: other threads and the test's event loop may leave
        # cycles of their own while the collector is off
        ours = [type(o).__name__ for o in gc.garbage if type(o).__module__.startswith("agentnb")]
        assert ours == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()

"""The run loop: limits end runs with ok=False and keep the partial trace; what a RunResult holds."""

from __future__ import annotations

import asyncio
import json

import pytest

import agentnb as a
from agentnb.trace.sizes import canonical_request


@a.tool
def fetch(key: str) -> str:
    """Fetch a value."""
    return f"<{key}>"


def looping_model(n: int = 50) -> a.ScriptedModel:
    return a.ScriptedModel([a.tool_call("fetch", key=str(i)) for i in range(n)])


# -- limits


async def test_max_turns_ends_the_run_with_the_partial_trace():
    model = looping_model()
    agent = a.Agent("looper", "Loop.", model, [fetch], max_turns=3)

    result = await a.run(agent, "go")

    assert not result.ok and result.output is None
    assert isinstance(result.error, a.MaxTurnsExceeded)
    assert "looper" in str(result.error) and "max_turns=3" in str(result.error)
    assert "all 3 turns" in str(result.error)
    assert len(model.requests) == 3
    assert list(result.calls["turn"]) == [1, 2, 3]
    assert [s.kind for s in result.spans].count("tool_call") == 3
    assert all(s.ended is not None for s in result.spans)
    assert result.messages[-1].role == "tool"  # the history so far is kept


async def test_the_run_max_turns_overrides_the_agent_s():
    model = looping_model()
    result = await a.run(a.Agent("looper", "Loop.", model, [fetch]), "go", max_turns=2)

    assert isinstance(result.error, a.MaxTurnsExceeded) and "max_turns=2" in str(result.error)
    assert len(model.requests) == 2


async def test_a_run_timeout_ends_the_run_and_closes_every_span():
    # the first request is answered at once, the second never in time
    model = a.ScriptedModel(
        [a.tool_call("fetch", key="k"), a.say("late")],
        latency=lambda request: 0 if len(request.messages) == 1 else 30,
    )

    result = await a.run(a.Agent("slow", "x", model, [fetch]), "go", timeout=0.05)

    assert not result.ok and isinstance(result.error, a.RunTimeout)
    assert "0.05 s" in str(result.error)
    assert list(result.calls["status"]) == ["ok", "cancelled"]
    assert result.spans[0].kind == "run" and result.spans[0].status == "timeout"
    assert all(s.ended is not None for s in result.spans)
    assert model.requests[1].tool_results == ["<k>"]


async def test_limits_timeout_is_the_same_as_the_timeout_shortcut():
    model = a.ScriptedModel([a.say("late")], latency=30)
    result = await a.run(a.Agent("slow", "x", model), "go", limits=a.Limits(timeout=0.02))
    assert isinstance(result.error, a.RunTimeout)


async def test_a_client_s_own_timeout_is_not_taken_for_the_run_s():
    def timed_out(request: a.ModelRequest) -> object:
        raise TimeoutError("read timed out")

    result = await a.run(a.Agent("w", "x", a.FunctionModel(timed_out)), "go", timeout=30)

    assert not result.ok and type(result.error) is TimeoutError
    assert str(result.error) == "read timed out"
    assert list(result.calls["status"]) == ["error"]


async def test_the_model_call_budget():
    model = looping_model()
    agent = a.Agent("looper", "Loop.", model, [fetch])

    result = await a.run(agent, "go", limits=a.Limits(max_model_calls=2))

    assert not result.ok and isinstance(result.error, a.BudgetExceeded)
    assert "2 calls made" in str(result.error) and "max_model_calls=2" in str(result.error)
    assert len(model.requests) == 2 and len(result.calls) == 2


def counted_model(n: int, usage: a.Usage | None = None) -> a.ScriptedModel:
    steps: list[object] = [
        a.ModelResponse(tool_calls=[a.tool_call("fetch", key=f"k{i}")], usage=usage or a.Usage())
        for i in range(n)
    ]
    return a.ScriptedModel(steps)  # type: ignore[arg-type]


async def test_the_token_budget_with_a_tokenizer_names_its_method(word_tokenizer: list[str]):
    agent = a.Agent("reader", "one two three four five", counted_model(10), [fetch])

    result = await a.run(agent, "six seven", limits=a.Limits(max_tokens=20))

    assert isinstance(result.error, a.BudgetExceeded) and result.error.fatal
    message = str(result.error)
    assert "counted with words" in message and "the limit is 20" in message
    # each call sends 7 words plus the history and generates 1 word of arguments
    calls = result.calls
    spent = int((calls["tokens_in"] + calls["tokens_out"]).sum())
    assert f"{spent:,} tokens used" in message
    assert (
        spent > 20 and spent - int(calls["tokens_in"].iloc[-1] + calls["tokens_out"].iloc[-1]) <= 20
    )


async def test_the_token_budget_without_a_tokenizer_says_it_estimates():
    agent = a.Agent("reader", "x" * 100, counted_model(10), [fetch])

    result = await a.run(agent, "go", limits=a.Limits(max_tokens=60))

    assert isinstance(result.error, a.BudgetExceeded)
    assert "characters/4" in str(result.error) and "estimate" in str(result.error)
    assert result.calls["tokens_in"].isna().all()  # the estimate is never passed off as a count


async def test_the_token_budget_prefers_provider_usage(word_tokenizer: list[str]):
    model = counted_model(10, a.Usage(input_tokens=40, output_tokens=5))
    agent = a.Agent("reader", "x", model, [fetch])

    result = await a.run(agent, "go", limits=a.Limits(max_tokens=100))

    assert isinstance(result.error, a.BudgetExceeded)
    assert "provider-reported usage" in str(result.error)
    assert "135 tokens used" in str(result.error)  # three calls of 45
    assert len(model.requests) == 3


@pytest.mark.parametrize(
    "kwargs", [{"max_model_calls": 0}, {"max_tokens": -1}, {"timeout": 0}, {"max_depth": -1}]
)
def test_bad_limits_are_user_errors(kwargs: dict[str, int]):
    with pytest.raises(a.UserError, match="Limits"):
        a.Limits(**kwargs)


# -- the error contract


async def test_a_failing_model_call_ends_the_run_and_records_an_error_row():
    def broken(request: a.ModelRequest) -> object:
        if request.tool_results:
            raise ConnectionError("server went away")
        return a.tool_call("fetch", key="k")

    result = await a.run(a.Agent("w", "x", a.FunctionModel(broken), [fetch]), "go")

    assert not result.ok and isinstance(result.error, ConnectionError)
    calls = result.calls
    assert list(calls["status"]) == ["ok", "error"]
    assert calls["stop_reason"].iloc[1] == "error"
    assert calls["chars_out"].iloc[1] == 0 and calls["chars_in"].iloc[1] > calls["chars_in"].iloc[0]
    span = result.spans[-1]
    assert span.kind == "model_call" and span.status == "error"
    assert result.usage.requests == 1  # the failed call returned no usage


async def test_a_user_error_inside_a_run_is_kept_not_raised():
    model = a.ScriptedModel(lambda request: 42)  # type: ignore[arg-type,return-value]
    result = await a.run(a.Agent("w", "x", model), "go")
    assert not result.ok and isinstance(result.error, a.UserError)
    assert "script step" in str(result.error)


# -- what a result holds


async def test_the_result_holds_output_usage_and_the_last_agent():
    model = a.ScriptedModel(
        [
            a.ModelResponse(tool_calls=[a.tool_call("fetch", key="a")], usage=a.Usage(100, 7, 1)),
            a.ModelResponse(text="done", usage=a.Usage(130, 2, 1)),
        ]
    )
    agent = a.Agent("w", "x", model, [fetch])

    result = await a.run(agent, "go")

    assert result.ok and result.error is None and result.output == "done"
    assert result.usage == a.Usage(230, 9, 2)
    assert result.last_agent is agent
    assert result.model_calls == 2
    assert result.messages[-1] == a.Message.assistant("done")
    assert "ok=True" in repr(result) and "'done'" in repr(result)


async def test_usage_is_none_when_the_model_does_not_report_it():
    result = await a.run(a.Agent("w", "x", a.ScriptedModel(["hi"])), "go")
    assert result.usage.input_tokens is None and result.usage.output_tokens is None
    assert result.usage.requests == 1


async def test_calls_has_exactly_the_trace_columns_one_row_per_model_call():
    model = a.ScriptedModel([[a.tool_call("fetch", key="a"), a.tool_call("fetch", key="b")], "ok"])

    result = await a.run(a.Agent("w", "x", model, [fetch]), "go")

    calls = result.calls
    assert tuple(calls.columns) == a.CALL_COLUMNS
    assert len(calls) == 2
    row = calls.iloc[0]
    assert row["run_id"] == result.run_id and row["agent"] == "w" and row["path"] == "w"
    assert row["depth"] == 0 and row["model"] == "scripted" and row["status"] == "ok"
    assert row["tool_calls"] == 2 and row["stop_reason"] == "tool_calls"
    assert row["ended"] >= row["started"] and row["latency_s"] == pytest.approx(
        row["ended"] - row["started"]
    )
    assert row["chars_out"] == len('{"key":"a"}') * 2
    assert calls.iloc[1]["chars_out"] == 2 and calls.iloc[1]["stop_reason"] == "stop"
    assert result.chars_in == int(calls["chars_in"].sum())


async def test_chars_in_is_the_canonical_request_and_its_parts_add_up():
    model = a.ScriptedModel(
        [
            a.ModelResponse(text="Let me look.", tool_calls=[a.tool_call("fetch", key='ü"x')]),
            [a.tool_call("fetch", key="a"), a.tool_call("nope")],
            "Fin — done.",
        ]
    )
    result = await a.run(a.Agent("w", "Be\nbrief.", model, [fetch]), 'Hé, "quote" me')

    parts = [c for c in a.CALL_COLUMNS if c.startswith("chars_in_")]
    assert len(parts) == 7
    for request, (_, row) in zip(model.requests, result.calls.iterrows(), strict=True):
        assert row["chars_in"] == len(canonical_request(request))
        assert sum(int(row[p]) for p in parts) == row["chars_in"]
    last = result.calls.iloc[-1]
    assert last["chars_in_system"] == len("Be\\nbrief.")
    assert last["chars_in_assistant"] == len("Let me look.")
    assert last["chars_in_user"] == len('Hé, \\"quote\\" me')
    assert last["chars_in_tool_results"] > 0 and last["chars_in_tool_args"] > 0


async def test_spans_form_a_tree_run_agent_then_calls():
    model = a.ScriptedModel([[a.tool_call("fetch", key="a"), a.tool_call("fetch", key="b")], "ok"])

    result = await a.run(a.Agent("w", "x", model, [fetch]), "go")

    kinds = [(s.kind, s.name) for s in result.spans]
    assert kinds == [
        ("run", "w"),
        ("agent", "w"),
        ("model_call", "scripted"),
        ("tool_call", "fetch"),
        ("tool_call", "fetch"),
        ("model_call", "scripted"),
    ]
    run_span, agent_span, *rest = result.spans
    assert run_span.parent_id is None and agent_span.parent_id == run_span.span_id
    assert all(s.parent_id == agent_span.span_id for s in rest)
    assert [s.status for s in result.spans] == ["ok"] * 6  # the run span too
    assert all(s.ended is not None for s in result.spans)
    assert result.calls["span_id"].tolist() == [rest[0].span_id, rest[3].span_id]
    tree = result.span_tree()
    assert len(tree) == 1 and tree[0]["kind"] == "run"
    assert [c["kind"] for c in tree[0]["children"][0]["children"]] == [
        "model_call",
        "tool_call",
        "tool_call",
        "model_call",
    ]


async def test_log_lines_are_json_with_run_depth_path_and_event():
    model = a.ScriptedModel([a.tool_call("fetch", key="a"), "ok"])

    result = await a.run(a.Agent("w", "x", model, [fetch]), "go")

    events = [json.loads(line) for line in result.log_lines()]
    assert events[0]["event"] == "run_start" and events[-1]["event"] == "run_end"
    for event in events:
        assert event["run"] == result.run_id
        assert event["depth"] == 0 and event["path"] == "w"
    assert events[-1]["status"] == "ok" and events[-1]["model_calls"] == 2


async def test_a_failed_run_logs_its_error():
    result = await a.run(a.Agent("w", "x", looping_model(), [fetch], max_turns=1), "go")
    end = json.loads(result.log_lines()[-1])
    assert end["status"] == "error" and end["error"].startswith("MaxTurnsExceeded:")


async def test_a_cancelled_task_sees_cancelled_error_as_asyncio_expects():
    started = asyncio.Event()

    async def hang(request: a.ModelRequest) -> object:
        started.set()
        await asyncio.sleep(30)
        return "never"

    model = a.FunctionModel(hang)
    agent = a.Agent("w", "x", model)
    task = asyncio.ensure_future(a.run(agent, "go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

"""The guards before each sub-agent call — depth, then recursion, then the model-call budget —
and the run context they share (one run id, depth and path restored after every call)."""

from __future__ import annotations

import asyncio
import json

import pytest

import agentnb as a


def legal_tax_cycle() -> tuple[a.Agent, a.Agent, a.Agent]:
    """coordinator -> legal -> tax -> legal ...: legal has tax as a tool and tax has legal."""
    legal = a.Agent(
        "legal",
        "Legal opinions.",
        a.ScriptedModel([a.tool_call("tax", input="What about VAT?"), "Full legal opinion."]),
    )
    tax = a.Agent(
        "tax",
        "Tax opinions.",
        a.ScriptedModel(
            [a.tool_call("legal", input="What about the contract?"), "Tax opinion, legal missing."]
        ),
    )
    legal.tools = [tax]
    tax.tools = [legal]
    coordinator = a.Agent(
        "coordinator",
        "Ask legal, then synthesise.",
        a.ScriptedModel([a.tool_call("legal", input="Assess the clause."), "Synthesis."]),
        [legal],
    )
    return coordinator, legal, tax


def events(result: a.RunResult, name: str) -> list[dict]:
    return [e for e in map(json.loads, result.log_lines()) if e["event"] == name]


def test_max_depth_defaults_to_two():
    assert a.Limits().max_depth == 2


@pytest.mark.parametrize(
    ("max_depth", "tax_reads"),
    [
        (
            2,
            "ERROR: maximum depth reached (2) at coordinator/legal/tax: legal was not called. "
            "Answer with the data you have and say what is missing.",
        ),
        (
            3,
            "ERROR: legal is already on the call path coordinator/legal/tax. "
            "Recursion is not allowed: conclude with the data you have.",
        ),
    ],
)
async def test_legal_tax_cycle_is_stopped_by_depth_then_by_path(max_depth, tax_reads):
    coordinator, legal, tax = legal_tax_cycle()

    result = await a.run(coordinator, "clause", limits=a.Limits(max_depth=max_depth))

    # the refusal is text the tax agent reads and recovers from; the run goes on to the synthesis
    assert tax.model.requests[1].tool_results == [tax_reads]
    assert result.ok, result.error
    assert result.output == "Synthesis."
    assert legal.model.requests[1].tool_results == ["Tax opinion, legal missing."]
    assert len(legal.model.requests) == 2  # legal was never entered a second time
    # depth and path are back at the root afterwards
    assert result.context.depth == 0 and result.context.active == []
    assert list(result.calls["path"]) == [
        "coordinator",
        "coordinator/legal",
        "coordinator/legal/tax",
        "coordinator/legal/tax",
        "coordinator/legal",
        "coordinator",
    ]
    assert list(result.calls["depth"]) == [0, 1, 2, 2, 1, 0]


async def test_sub_agent_start_and_end_are_log_lines_with_the_position_in_the_tree():
    coordinator, _, _ = legal_tax_cycle()

    result = await a.run(coordinator, "clause", limits=a.Limits(max_depth=2))

    lines = [json.loads(line) for line in result.log_lines()]
    sub = [e for e in lines if e["event"] in ("sub_agent_start", "sub_agent_end")]
    assert [(e["event"], e["depth"], e["path"], e["agent"]) for e in sub] == [
        ("sub_agent_start", 1, "coordinator/legal", "legal"),
        ("sub_agent_start", 2, "coordinator/legal/tax", "tax"),
        ("sub_agent_end", 2, "coordinator/legal/tax", "tax"),
        ("sub_agent_end", 1, "coordinator/legal", "legal"),
    ]
    assert [e["turns"] for e in sub if e["event"] == "sub_agent_end"] == [2, 2]
    assert {e["run"] for e in lines} == {result.run_id}
    assert all(list(e)[:4] == ["run", "depth", "path", "event"] for e in lines)
    (guard,) = events(result, "guard")
    # the line is the caller's (tax, where the refusal happened); target names who was refused
    assert (guard["path"], guard["agent"], guard["tool"], guard["target"]) == (
        "coordinator/legal/tax",
        "tax",
        "legal",
        "legal",
    )
    assert guard["reason"].startswith("ERROR: maximum depth reached")


async def test_an_agent_calling_itself_is_refused_at_once():
    echo = a.Agent("echo", "Echo.", a.ScriptedModel([a.tool_call("echo", input="again"), "done"]))
    echo.tools = [echo]

    result = await a.run(echo, "go", limits=a.Limits(max_depth=5))

    assert result.ok and result.output == "done"
    assert echo.model.requests[1].tool_results == [
        "ERROR: echo is already on the call path echo. "
        "Recursion is not allowed: conclude with the data you have."
    ]
    assert list(result.calls["depth"]) == [0, 0]


async def test_recursion_compares_agents_not_tool_names():
    # the same agent under another tool name is still recursion ...
    legal = a.Agent(
        "legal", "Legal.", a.ScriptedModel([a.tool_call("contract_law", input="?"), "ok"])
    )
    legal.tools = [legal.as_tool(name="contract_law")]
    # ... while two different agents that share a name are not
    inner = a.Agent("reviewer", "Inner.", a.ScriptedModel(["inner answer"]))
    outer = a.Agent(
        "reviewer", "Outer.", a.ScriptedModel([a.tool_call("second_look", input="?"), "ok"])
    )
    outer.tools = [inner.as_tool(name="second_look")]
    coordinator = a.Agent(
        "coordinator",
        "c",
        a.ScriptedModel(
            [[a.tool_call("legal", input="?"), a.tool_call("reviewer", input="?")], "done"]
        ),
        [legal, outer],
    )

    result = await a.run(coordinator, "go", limits=a.Limits(max_depth=5))

    assert result.ok, result.error
    assert (
        legal.model.requests[1]
        .tool_results[0]
        .startswith("ERROR: contract_law is already on the call path coordinator/legal.")
    )
    assert outer.model.requests[1].tool_results == ["inner answer"]
    assert "coordinator/reviewer/second_look" in set(result.calls["path"])


async def test_depth_guard_comes_before_the_path_guard_and_both_before_the_budget():
    coordinator, _, tax = legal_tax_cycle()
    # three calls made when tax asks for legal: the budget is spent, yet the path guard answers
    # first (text), and only tax's next model call runs into the budget
    limits = a.Limits(max_depth=3, max_model_calls=3)

    result = await a.run(coordinator, "clause", limits=limits)

    (guard,) = events(result, "guard")
    assert guard["reason"].startswith("ERROR: legal is already on the call path")
    assert not result.ok
    assert isinstance(result.error, a.BudgetExceeded)
    assert "at coordinator/legal/tax: 3 calls made, Limits(max_model_calls=3) allows 3" in str(
        result.error
    )
    assert len(tax.model.requests) == 1


async def test_an_exhausted_call_budget_ends_the_run_and_keeps_the_trace():
    legal = a.Agent("legal", "Legal.", a.ScriptedModel(["legal: fine"]))
    tax = a.Agent("tax", "Tax.", a.ScriptedModel(["tax: fine"]))
    coordinator = a.Agent(
        "coordinator",
        "Ask legal, then tax.",
        a.ScriptedModel(
            [a.tool_call("legal", input="?"), a.tool_call("tax", input="?"), "Both fine."]
        ),
        [legal, tax],
    )

    result = await a.run(coordinator, "clause", limits=a.Limits(max_model_calls=3))

    assert not result.ok and result.output is None
    assert isinstance(result.error, a.BudgetExceeded)
    assert str(result.error) == (
        "Model-call budget exhausted before calling coordinator/tax: 3 calls made, "
        "Limits(max_model_calls=3) allows 3."
    )
    assert tax.model.requests == []  # refused before the sub-agent started
    assert list(result.calls["path"]) == ["coordinator", "coordinator/legal", "coordinator"]
    assert all(s.ended is not None for s in result.spans)
    assert result.context.active == [] and result.context.depth == 0
    (end,) = events(result, "run_end")
    assert end["status"] == "error" and end["error"].startswith("BudgetExceeded:")


async def test_a_budget_spent_inside_a_sub_agent_ends_the_run_not_just_the_sub_agent():
    legal = a.Agent(
        "legal",
        "Legal.",
        a.ScriptedModel([[a.say("Checking."), a.tool_call("lookup")], "never"]),
        [a.tool(lambda: "...", name="lookup", description="Look something up.")],
    )
    coordinator = a.Agent(
        "coordinator", "c", a.ScriptedModel([a.tool_call("legal", input="?"), "x"]), [legal]
    )

    result = await a.run(coordinator, "clause", limits=a.Limits(max_model_calls=2))

    assert not result.ok and isinstance(result.error, a.BudgetExceeded)
    assert "at coordinator/legal: 2 calls made" in str(result.error)
    assert len(result.calls) == 2
    assert result.context.active == []
    (end,) = events(result, "sub_agent_end")
    assert (end["path"], end["status"], end["turns"]) == ("coordinator/legal", "error", 2)


async def test_depth_and_path_are_restored_when_a_sub_agent_raises():
    def broken(request):
        raise RuntimeError("the client crashed")

    legal = a.Agent("legal", "Legal.", a.FunctionModel(broken))
    coordinator = a.Agent(
        "coordinator", "c", a.ScriptedModel([a.tool_call("legal", input="?"), "x"]), [legal]
    )

    result = await a.run(coordinator, "clause")

    # the crash is the sub-agent's failure: its caller is told in text and goes on
    assert result.ok and result.output == "x"
    told = coordinator.model.requests[1].tool_results
    assert told == ["ERROR: legal failed: RuntimeError: the client crashed"]
    assert result.context.active == [] and result.context.depth == 0
    (end,) = events(result, "sub_agent_end")
    assert end["status"] == "error" and "the client crashed" in end["error"]
    assert all(s.ended is not None for s in result.spans)


async def test_parallel_sub_agents_each_have_their_own_path_and_depth():
    contexts: list[a.RunContext] = []
    arrived: list[str] = []
    both_running = asyncio.Event()
    seen: dict[str, object] = {}

    @a.tool
    def remember(ctx: a.ToolCallContext) -> str:
        """Keep the run context (for the test)."""
        contexts.append(ctx.run)
        return "ok"

    def reviewer(name: str) -> a.Agent:
        async def reply(request: a.ModelRequest) -> str:
            arrived.append(name)
            if len(arrived) == 2:  # the second one to start: both are running now
                seen["running"] = sorted((s.path, s.depth) for s in contexts[0].active)
                seen["depth"] = contexts[0].depth
                both_running.set()
            await both_running.wait()
            return f"{name}: fine"

        return a.Agent(name, f"{name} review.", a.FunctionModel(reply))

    coordinator = a.Agent(
        "coordinator",
        "c",
        a.ScriptedModel(
            [
                a.tool_call("remember"),
                [a.tool_call("legal", input="?"), a.tool_call("tax", input="?")],
                "done",
            ]
        ),
        [remember, reviewer("legal"), reviewer("tax")],
    )

    result = await a.run(coordinator, "clause")

    assert result.ok, result.error
    assert seen["running"] == [("coordinator", 0), ("coordinator/legal", 1), ("coordinator/tax", 1)]
    assert seen["depth"] == 1
    assert result.context.depth == 0 and result.context.active == []


async def test_a_clients_own_timeout_is_not_taken_for_the_tools_timeout():
    def slow_network(request):
        raise TimeoutError("read timed out")

    legal = a.Agent("legal", "Legal.", a.FunctionModel(slow_network))
    coordinator = a.Agent(
        "coordinator",
        "c",
        a.ScriptedModel([a.tool_call("legal", input="?"), "x"]),
        [legal.as_tool(timeout=30)],
    )

    result = await a.run(coordinator, "clause")

    assert result.ok
    (told,) = coordinator.model.requests[1].tool_results
    assert told == "ERROR: legal failed: TimeoutError: read timed out"

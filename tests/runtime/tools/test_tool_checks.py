"""Tool guardrails (allow / reject / stop) and approval for function tools, as on ``as_tool``."""

from __future__ import annotations

from typing import Any

import agentnb as a

RAN: list[dict[str, Any]] = []


def no_drop(ctx: Any, tool_name: str, arguments: dict[str, Any]) -> a.ToolGuardrail:
    if "drop" in arguments.get("sql", ""):
        return a.ToolGuardrail.reject("refused: no DROP statements")
    return a.ToolGuardrail.allow()


def stop_on_drop(ctx: Any, tool_name: str, arguments: dict[str, Any]) -> a.ToolGuardrail:
    return (
        a.ToolGuardrail.stop("DROP attempted")
        if "drop" in arguments["sql"]
        else a.ToolGuardrail.allow()
    )


async def redact(
    ctx: Any, tool_name: str, arguments: dict[str, Any], result: str
) -> a.ToolGuardrail:
    return a.ToolGuardrail.reject("[redacted]") if "password" in result else a.ToolGuardrail.allow()


def make_query(**options: Any) -> a.Tool:
    @a.tool(**options)
    def query(sql: str) -> str:
        """Run SQL."""
        RAN.append({"sql": sql})
        return "rows: password=hunter2" if "users" in sql else "rows: 3"

    return query


def agent_for(tool: a.Tool, *calls: Any) -> tuple[a.Agent, a.ScriptedModel]:
    model = a.ScriptedModel([*calls, a.say("done")])
    return a.Agent("w", "x", model, [tool]), model


def test_an_input_guardrail_rejection_is_the_tools_result_and_the_tool_does_not_run():
    RAN.clear()
    agent, model = agent_for(
        make_query(input_guardrails=[no_drop]), a.tool_call("query", sql="drop t")
    )
    result = a.run_sync(agent, "go")
    assert result.ok and model.requests[1].tool_results == ["refused: no DROP statements"]
    assert RAN == []
    tool_span = next(s for s in result.spans if s.kind == "tool_call")
    guard = next(s for s in result.spans if s.kind == "guardrail")
    assert tool_span.status == "refused" and guard.parent_id == tool_span.span_id
    assert guard.attrs["action"] == "reject" and guard.attrs["stage"] == "tool_input"


def test_an_output_guardrail_replaces_the_result():
    agent, model = agent_for(
        make_query(output_guardrails=[redact]), a.tool_call("query", sql="select users")
    )
    result = a.run_sync(agent, "go")
    assert result.ok and model.requests[1].tool_results == ["[redacted]"]


def test_stop_ends_the_run_with_guardrail_tripped():
    agent, model = agent_for(
        make_query(input_guardrails=[stop_on_drop]), a.tool_call("query", sql="drop t")
    )
    result = a.run_sync(agent, "go")
    assert isinstance(result.error, a.GuardrailTripped)
    assert (result.error.guardrail, result.error.agent, result.error.info) == (
        "stop_on_drop",
        "query",
        "DROP attempted",
    )
    assert len(model.requests) == 1


def test_tool_guardrails_on_a_sub_agent():
    sub_model = a.ScriptedModel([a.say("never")])
    sub = a.Agent("legal", "x", sub_model)

    def no_tax(ctx: Any, tool_name: str, arguments: dict[str, Any]) -> a.ToolGuardrail:
        return (
            a.ToolGuardrail.reject("not about tax")
            if "tax" in arguments["input"]
            else a.ToolGuardrail.allow()
        )

    boss_model = a.ScriptedModel([a.tool_call("legal", input="tax?"), a.say("ok")])
    result = a.run_sync(
        a.Agent("boss", "x", boss_model, [sub.as_tool(input_guardrails=[no_tax])]), "go"
    )
    assert result.ok and boss_model.requests[1].tool_results == ["not about tax"]
    assert sub_model.requests == []


def test_a_raising_tool_guardrail_ends_the_run_with_its_exception():
    def broken(ctx: Any, tool_name: str, arguments: dict[str, Any]) -> a.ToolGuardrail:
        raise KeyError("bug")

    agent, _ = agent_for(make_query(input_guardrails=[broken]), a.tool_call("query", sql="x"))
    result = a.run_sync(agent, "go")
    assert not result.ok and isinstance(result.error, KeyError)


# -- approval for function tools


def test_a_function_tool_needing_approval_asks_the_approver_and_lists_the_decision():
    RAN.clear()
    asked: list[a.PendingCall] = []

    def approver(pending: a.PendingCall) -> a.Approval:
        asked.append(pending)
        return a.Approval("drop" not in pending.arguments["sql"], "no destructive SQL")

    agent, model = agent_for(
        make_query(needs_approval=True),
        a.tool_call("query", sql="select 1"),
        a.tool_call("query", sql="drop t"),
    )
    result = a.run_sync(agent, "go", approver=approver)

    assert result.ok
    assert model.requests[2].tool_results == [
        "rows: 3",
        "call to query rejected: no destructive SQL",
    ]
    assert RAN == [{"sql": "select 1"}]
    assert [(p.tool, p.caller, p.arguments) for p in asked] == [
        ("query", "w", {"sql": "select 1"}),
        ("query", "w", {"sql": "drop t"}),
    ]
    records = result.approvals
    assert [(r.tool, r.arguments, r.who, r.decision, r.reason) for r in records] == [
        ("query", {"sql": "select 1"}, "approver", "approved", "no destructive SQL"),
        ("query", {"sql": "drop t"}, "approver", "rejected", "no destructive SQL"),
    ]
    assert records[0].time <= records[1].time and records[0].path == "w"
    assert [e["approved"] for e in result.trace.records if e["event"] == "approval"] == [
        True,
        False,
    ]
    assert len([s for s in result.spans if s.kind == "approval"]) == 2


def test_needs_approval_as_a_function_of_ctx_and_arguments():
    seen: list[Any] = []

    async def risky(ctx: Any, arguments: dict[str, Any]) -> bool:
        seen.append((ctx.run_id, arguments))
        return "drop" in arguments["sql"]

    agent, model = agent_for(
        make_query(needs_approval=risky),
        [a.tool_call("query", sql="select 1"), a.tool_call("query", sql="drop t")],
    )
    result = a.run_sync(agent, "go", approver=a.reject_all)
    assert model.requests[1].tool_results == [
        "rows: 3",
        "call to query rejected: the run's approver rejects every call (reject_all)",
    ]
    assert [r.decision for r in result.approvals] == ["rejected"]
    assert [args for _, args in seen] == [{"sql": "select 1"}, {"sql": "drop t"}]


def test_as_tool_needs_approval_records_its_decisions_too():
    sub = a.Agent("legal", "x", a.ScriptedModel([a.say("fine")]))
    boss_model = a.ScriptedModel([a.tool_call("legal", input="q"), a.say("ok")])
    boss = a.Agent("boss", "x", boss_model, [sub.as_tool(needs_approval=lambda ctx, args: True)])
    result = a.run_sync(boss, "go", approver=a.approve_all)
    assert [(r.tool, r.arguments, r.who, r.decision) for r in result.approvals] == [
        ("legal", {"input": "q", "artifacts": []}, "approve_all", "approved")
    ]


def test_a_function_tool_needing_approval_without_an_approver_ends_the_run():
    agent, _ = agent_for(make_query(needs_approval=True), a.tool_call("query", sql="x"))
    result = a.run_sync(agent, "go")
    assert isinstance(result.error, a.NoApprover)


def test_a_function_tool_in_a_sub_agent_asks_the_runs_approver():
    sub = a.Agent(
        "db",
        "x",
        a.ScriptedModel([a.tool_call("query", sql="x"), a.say("sub done")]),
        [make_query(needs_approval=True)],
    )
    boss_model = a.ScriptedModel([a.tool_call("db", input="q"), a.say("ok")])
    result = a.run_sync(
        a.Agent("boss", "x", boss_model, [sub.as_tool()]), "go", approver=a.reject_all
    )
    assert result.ok and [(r.tool, r.path) for r in result.approvals] == [("query", "boss/db")]


def test_a_team_members_tool_guardrails_apply_when_the_team_routes_to_it():
    legal_model = a.ScriptedModel([a.say("never")])
    legal = a.Agent("legal", "x", legal_model)

    def no_tax(ctx: Any, tool_name: str, arguments: dict[str, Any]) -> a.ToolGuardrail:
        return (
            a.ToolGuardrail.reject("not about tax")
            if "tax" in arguments["input"]
            else a.ToolGuardrail.allow()
        )

    consult = a.team([legal.as_tool(input_guardrails=[no_tax])])
    boss_model = a.ScriptedModel(
        [a.tool_call("consult", member="legal", input="tax?"), a.say("ok")]
    )
    result = a.run_sync(a.Agent("boss", "x", boss_model, [consult]), "go")
    assert result.ok and boss_model.requests[1].tool_results == ["not about tax"]
    assert legal_model.requests == []

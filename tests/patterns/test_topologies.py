"""The four topologies: star, hierarchy, chain, mesh — each built, run and traced."""

from __future__ import annotations

import json

import pytest

import agentnb as a

CLAUSE = "The supplier guarantees 100% availability."


def agent(name: str, *steps: object) -> a.Agent:
    return a.Agent(name, f"You are {name}.", a.ScriptedModel(list(steps)))


def events(result: a.RunResult, kind: str) -> list[dict]:
    return [e for e in map(json.loads, result.log_lines()) if e["event"] == kind]


async def test_star_hands_the_request_to_one_specialist():
    triage = agent("Triage", a.tool_call("transfer_to_billing"))
    refunds, billing = agent("Refunds", "unused"), agent("Billing", "Invoice resent.")
    topo = a.star(triage, [refunds, billing])
    result = await topo.run("Resend my invoice.")

    assert topo.kind == "star" and topo.edges() == [
        ("Triage", "Refunds", "handoff"),
        ("Triage", "Billing", "handoff"),
    ]
    assert triage.handoffs == []  # the builder wired a clone
    assert result.ok and result.last_agent is billing and result.output == "Invoice resent."
    assert list(result.calls["agent"]) == ["Triage", "Billing"]
    assert [e["agent"] for e in events(result, "handoff")] == ["Billing"]


async def test_hierarchy_keeps_control_with_the_orchestrator():
    coordinator = agent(
        "Coordinator",
        [a.tool_call("legal", input=CLAUSE), a.tool_call("tax", input=CLAUSE)],
        "Overall: needs changes.",
    )
    legal, tax = agent("Legal", "needs changes"), agent("Tax", "acceptable")
    topo = a.hierarchy(coordinator, [legal, tax], max_result_chars=500)
    result = await topo.run(CLAUSE)

    assert topo.edges() == [("Coordinator", "Legal", "tool"), ("Coordinator", "Tax", "tool")]
    assert result.ok and result.last_agent is topo.entry
    assert list(result.calls["depth"]) == [0, 1, 1, 0]
    assert sorted(result.calls["path"][1:3]) == ["Coordinator/legal", "Coordinator/tax"]
    assert legal.model.requests[0].last_user_text == CLAUSE  # type: ignore[union-attr]
    assert [d["agent"] for d in topo.graph()["delegates"]] == ["Legal", "Tax"]


async def test_pipeline_runs_its_stages_in_order():
    topo = a.pipeline(agent("Extract", "12.5 EUR"), agent("Validate", "valid"))
    result = await topo.run("Pay twelve euros fifty.")
    assert topo.edges() == [("Extract", "Validate", "next")]
    assert isinstance(result, a.ChainResult) and result.output == "valid"
    assert list(result.calls["stage"]) == ["Extract", "Validate"]


def legal_and_tax() -> list[a.Agent]:
    """Two agents that each consult the other: a cycle waiting to happen."""
    legal = agent("Legal", a.tool_call("tax", input="What about VAT?"), "Complete legal opinion.")
    tax = agent(
        "Tax",
        a.tool_call("legal", input="What about the contract?"),
        "Tax opinion with what I have.",
    )
    return [legal, tax]


@pytest.mark.parametrize(
    ("max_depth", "refusal"),
    [
        (1, "ERROR: maximum depth reached (1) at Legal/tax"),
        (2, "ERROR: legal is already on the call path Legal/tax"),
    ],
)
async def test_mesh_cycles_are_stopped_by_the_depth_and_path_guards(max_depth, refusal):
    topo = a.mesh(legal_and_tax())
    result = await topo.run("Assess the clause.", limits=a.Limits(max_depth=max_depth))

    assert topo.edges() == [("Legal", "Tax", "tool"), ("Tax", "Legal", "tool")]
    assert result.ok and result.output == "Complete legal opinion."
    tax_model = topo.agent("Tax").model
    assert tax_model.requests[1].tool_results[0].startswith(refusal)  # type: ignore[union-attr]
    assert len(events(result, "guard")) == 1
    assert list(result.calls["path"]) == ["Legal", "Legal/tax", "Legal/tax", "Legal"]
    assert result.context is not None and result.context.depth == 0  # restored afterwards


async def test_a_mesh_of_handoffs_refuses_to_hand_control_back():
    first = agent("First", a.tool_call("transfer_to_second"))
    second = agent("Second", a.tool_call("transfer_to_first"), "Answered by Second.")
    topo = a.mesh([first, second], via="handoffs")
    result = await topo.run("hi")

    assert result.ok and result.last_agent is topo.agent("Second")
    assert (
        topo.agent("Second")
        .model.requests[1]
        .tool_results[-1]
        .startswith(  # type: ignore[union-attr]
            "ERROR: First already had control"
        )
    )
    assert [e["reason"] for e in events(result, "guard")] == ["handoff cycle"]


def test_builders_refuse_what_they_cannot_wire():
    one = agent("One", "x")
    with pytest.raises(a.UserError, match="two agents are named 'One'"):
        a.mesh([one, agent("One", "y")])
    with pytest.raises(a.UserError, match="at least two"):
        a.mesh([one])
    with pytest.raises(a.UserError, match="at least one specialist"):
        a.star(one, [])
    with pytest.raises(a.UserError, match="via"):
        a.mesh([one, agent("Two", "x")], via="carrier-pigeon")  # type: ignore[arg-type]

"""`agentnb.team`: several agents behind one tool, each keeping its governance, rows and path."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

import agentnb as a
from agentnb.runtime.guards.approval import reject_all

CLAUSE = "The supplier may terminate at any time without notice."


def reviewer(name: str, text: str, latency: float = 0.0) -> tuple[a.Agent, a.ScriptedModel]:
    model = a.ScriptedModel([a.say(text)], latency)
    return a.Agent(
        name, f"You review from the {name} side.", model, description=f"{name} view"
    ), model


def coordinator(members: list, calls: list) -> tuple[a.Agent, a.ScriptedModel]:
    model = a.ScriptedModel([calls, a.say("done")])
    return a.Agent("boss", "Ask the team.", model, [a.team(members, name="consult")]), model


def test_the_team_routes_each_call_to_the_member_it_names():
    legal, legal_model = reviewer("legal", "legal opinion")
    tax, tax_model = reviewer("tax", "tax opinion")
    boss, boss_model = coordinator(
        [legal, tax],
        [
            a.tool_call("consult", member="tax", input="VAT?"),
            a.tool_call("consult", member="legal", input="Liability?"),
        ],
    )

    result = a.run_sync(boss, "Review it.")

    assert result.ok and result.output == "done"
    assert [r.last_user_text for r in legal_model.requests] == ["Liability?"]
    assert [r.last_user_text for r in tax_model.requests] == ["VAT?"]
    assert boss_model.requests[1].tool_results == ["tax opinion", "legal opinion"]
    # one spec for the whole team; the member is an enum, each member's description once
    (spec,) = boss_model.requests[0].tools
    assert spec.name == "consult"
    assert spec.parameters["properties"]["member"] == {"enum": ["legal", "tax"]}
    assert spec.parameters["required"] == ["member", "input"]
    assert "legal: legal view" in spec.description and "tax: tax view" in spec.description
    # each member keeps its own rows and path
    rows = result.calls
    assert sorted(rows.loc[rows["depth"] == 1, "path"]) == ["boss/legal", "boss/tax"]
    assert set(rows["agent"]) == {"boss", "legal", "tax"}


def test_members_sharing_a_description_share_one_line():
    members = [a.Agent(n, "Review.", a.ScriptedModel([]), description="Opinion.") for n in "xyz"]
    tool = a.team(members)
    assert tool.description == "Ask one member of the team. Each member: Opinion."
    assert a.team(members, description="Pick one.").description == "Pick one."


def test_an_unknown_member_or_bad_arguments_go_back_to_the_model_as_text():
    legal, legal_model = reviewer("legal", "legal opinion")
    boss, boss_model = coordinator(
        [legal],
        [
            a.tool_call("consult", member="marketing", input="Slogan?"),
            a.tool_call("consult", input="Nobody named"),
            a.tool_call("consult", member="legal"),
        ],
    )

    result = a.run_sync(boss, "Review it.")

    assert result.ok
    unknown, missing, no_input = boss_model.requests[1].tool_results
    assert unknown == "ERROR: consult has no member 'marketing'. Members: legal."
    assert missing == "ERROR: consult has no member None. Members: legal."
    assert "invalid arguments for legal" in no_input and "input" in no_input
    assert legal_model.requests == []


def test_documents_travel_by_handle_to_the_member():
    legal, legal_model = reviewer("legal", "legal opinion")
    boss, boss_model = coordinator(
        [legal], [a.tool_call("consult", member="legal", input="Review.", artifacts=["clause"])]
    )

    result = a.run_sync(boss, "Review the attached clause.", artifacts={"clause": CLAUSE})

    assert result.ok
    (request,) = legal_model.requests
    assert request.last_user_text == f"Review.\n\n## Document: clause\n{CLAUSE}"
    assert all(CLAUSE not in str(r.messages) for r in boss_model.requests)


def test_each_member_keeps_its_own_governance():
    slow, slow_model = reviewer("slow", "too late", latency=5.0)
    guarded, guarded_model = reviewer("guarded", "never asked")
    quick, _ = reviewer("quick", "x" * 50)
    boss, boss_model = coordinator(
        [
            slow.as_tool(timeout=0.05),
            guarded.as_tool(needs_approval=True),
            quick.as_tool(max_result_chars=10),
        ],
        [
            a.tool_call("consult", member="slow", input="?"),
            a.tool_call("consult", member="guarded", input="?"),
            a.tool_call("consult", member="quick", input="?"),
        ],
    )

    result = a.run_sync(boss, "Go.", approver=reject_all)

    assert result.ok
    timed_out, rejected, cut = boss_model.requests[1].tool_results
    assert timed_out == "ERROR: slow did not answer within 0.05 s."
    assert "guarded" in rejected and guarded_model.requests == []
    assert cut.startswith("x" * 10 + "\n[truncated: 40 of 50 characters cut")
    statuses = sorted(s.status for s in result.spans if s.kind == "tool_call")
    assert statuses == ["ok", "refused", "timeout"]


async def test_the_guards_apply_to_members_as_to_any_sub_agent():
    # legal's team contains legal itself: the path guard refuses the call
    legal_model = a.ScriptedModel(
        [a.tool_call("consult", member="legal", input="again"), a.say("legal done")]
    )
    legal = a.Agent("legal", "Review.", legal_model)
    legal.tools = [a.team([legal], name="consult")]
    boss, _ = coordinator([legal], [a.tool_call("consult", member="legal", input="start")])

    result = await a.run(boss, "Go.")

    assert result.ok
    refusal = legal_model.requests[1].tool_results[0]
    assert refusal.startswith("ERROR: legal is already on the call path boss/legal.")


def test_the_graph_shows_every_member():
    legal, _ = reviewer("legal", "-")
    tax, _ = reviewer("tax", "-")
    boss, _ = coordinator([legal, tax], [a.tool_call("consult", member="tax", input="?")])

    graph = boss.graph()

    assert [(d["tool"], d["member"], d["agent"]) for d in graph["delegates"]] == [
        ("consult", "legal", "legal"),
        ("consult", "tax", "tax"),
    ]
    edges = a.Topology("star", [boss, legal, tax]).edges()
    assert edges == [("boss", "legal", "tool"), ("boss", "tax", "tool")]


class Structured(BaseModel):
    question: str


@pytest.mark.parametrize(
    ("members", "kwargs", "message"),
    [
        ([], {}, "needs at least one agent"),
        (["legal"], {}, "must be a list of Agents or agent.as_tool"),
        ("dup", {}, "distinct names; legal appears more than once"),
        ("one", {"name": "no spaces"}, "not a usable tool name"),
        ("one", {"description": 5}, "must be text"),
        ("schema", {}, "has an input_schema"),
    ],
)
def test_mistakes_are_user_errors_that_say_what_to_do(members, kwargs, message):
    legal, _ = reviewer("legal", "-")
    if members == "dup":
        members = [legal, legal]
    elif members == "one":
        members = [legal]
    elif members == "schema":
        members = [legal.as_tool(input_schema=Structured)]
    with pytest.raises(a.UserError, match=message):
        a.team(members, **kwargs)


def test_members_run_in_parallel_within_one_turn():
    members = [reviewer(n, n, latency=0.2)[0] for n in ("legal", "tax", "tech")]
    boss, _ = coordinator(
        members, [a.tool_call("consult", member=m.name, input="?") for m in members]
    )

    result = asyncio.run(a.run(boss, "Go."))

    spans = [s for s in result.spans if s.kind == "agent" and s.depth == 1]
    assert len(spans) == 3
    # all three started before the first one ended (times from the trace)
    assert max(s.started for s in spans) < min(s.ended for s in spans)

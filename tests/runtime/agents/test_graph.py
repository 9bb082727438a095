"""`Agent.graph()`: the topology as nested dicts, cycles marked rather than followed."""

from __future__ import annotations

import agentnb as a


def agent(name: str, tools=(), handoffs=()) -> a.Agent:
    return a.Agent(name, f"{name}.", a.ScriptedModel([]), list(tools), handoffs=list(handoffs))


def test_a_hierarchy_lists_function_tools_and_delegates():
    @a.tool
    def lookup(term: str) -> str:
        """Look a term up."""
        return term

    legal, tax = agent("legal"), agent("tax", [lookup])
    coordinator = agent("coordinator", [lookup, legal, tax.as_tool(name="tax_opinion")])

    leaf = {"tools": [], "delegates": [], "handoffs": []}
    assert coordinator.graph() == {
        "agent": "coordinator",
        "tools": ["lookup"],
        "delegates": [
            {"tool": "legal", "agent": "legal", **leaf},
            {"tool": "tax_opinion", "agent": "tax", **leaf, "tools": ["lookup"]},
        ],
        "handoffs": [],
    }


def test_the_legal_tax_cycle_is_marked_not_followed():
    legal, tax = agent("legal"), agent("tax")
    legal.tools = [tax]
    tax.tools = [legal]
    coordinator = agent("coordinator", [legal])

    graph = coordinator.graph()

    (legal_node,) = graph["delegates"]
    (tax_node,) = legal_node["delegates"]
    assert (legal_node["agent"], tax_node["agent"]) == ("legal", "tax")
    assert tax_node["delegates"] == [{"tool": "legal", "agent": "legal", "cycle": True}]
    assert legal.model.requests == [] and tax.model.requests == []  # nothing ran


def test_an_agent_that_has_itself_as_a_tool():
    echo = agent("echo")
    echo.tools = [echo]

    assert echo.graph()["delegates"] == [{"tool": "echo", "agent": "echo", "cycle": True}]


def test_a_shared_sub_agent_on_two_branches_is_not_a_cycle():
    shared = agent("shared")
    coordinator = agent("coordinator", [agent("legal", [shared]), agent("tax", [shared])])

    graph = coordinator.graph()

    for branch in graph["delegates"]:
        (node,) = branch["delegates"]
        assert node["agent"] == "shared" and "cycle" not in node


def test_handoffs_appear_beside_delegates():
    billing, refunds = agent("billing"), agent("refunds")
    triage = agent("triage", handoffs=[billing, a.Handoff(refunds)])
    refunds.handoffs = [triage]

    graph = triage.graph()

    assert [h["agent"] for h in graph["handoffs"]] == ["billing", "refunds"]
    assert graph["handoffs"][1]["handoffs"] == [{"agent": "triage", "cycle": True}]
    assert graph["tools"] == []  # the transfer tools are shown as handoffs, not as tools

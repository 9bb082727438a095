"""Counts printed anywhere say "1 call" and "2 calls", never "1 calls"."""

from __future__ import annotations

import agentnb as a
from agentnb.words import plural


def test_plural_keeps_the_singular_for_exactly_one():
    assert [plural(n, "model call") for n in (0, 1, 2, 1204)] == [
        "0 model calls",
        "1 model call",
        "2 model calls",
        "1,204 model calls",
    ]


def test_a_sub_agent_stopped_after_one_turn_says_one_turn():
    looping = a.Agent(
        "legal", "Review.", a.ScriptedModel([a.tool_call("legal_lookup", q="x")]), max_turns=1
    )

    @a.tool
    def legal_lookup(q: str) -> str:
        """Look something up."""
        return q

    looping.tools = [legal_lookup]
    boss_model = a.ScriptedModel([a.tool_call("legal", input="go"), a.say("done")])
    boss = a.Agent("boss", "Coordinate.", boss_model, [looping])

    result = a.run_sync(boss, "Go.")

    assert result.ok
    assert boss_model.requests[1].tool_results == [
        "ERROR: legal stopped after 1 turn without a final answer."
    ]


def test_model_reprs_count_in_words():
    model = a.ScriptedModel([a.say("one")])
    assert repr(model) == "ScriptedModel(1 step, received 0 requests)"
    a.run_sync(a.Agent("x", "Answer.", model), "hi")
    assert repr(model) == "ScriptedModel(1 step, received 1 request)"

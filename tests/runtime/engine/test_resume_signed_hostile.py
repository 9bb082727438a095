"""A signed state (``to_state(key=...)``) in hostile hands: whoever lacks the key cannot make an
edited state run, whatever they re-sign or strip; each try is a `UserError` and nothing runs."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import agentnb as a
from agentnb.runtime.data.run_state import seal

KEY = "the-right-key"
ran: list[dict[str, Any]] = []


@a.tool(needs_approval=True)
def refund(order: str, amount: int) -> str:
    """Refund an order."""
    ran.append({"order": order, "amount": amount})
    return f"refunded {amount} on {order}"


def support() -> tuple[a.Agent, a.ScriptedModel]:
    model = a.ScriptedModel([a.tool_call("refund", order="7", amount=40), a.say("Refunded.")])
    return a.Agent("support", "x", model, [refund]), model


@pytest.fixture
def signed() -> dict[str, Any]:
    paused = a.run_sync(support()[0], "Refund order 7", approver="pause")
    ran.clear()
    return json.loads(json.dumps(paused.to_state(key=KEY)))


def edited(state: dict[str, Any]) -> dict[str, Any]:
    """The refund's amount raised everywhere the state shows it, digests recomputed."""
    state = copy.deepcopy(state)
    state["interruptions"][0]["arguments"]["amount"] = 40000
    text = json.dumps({"order": "7", "amount": 40000}, separators=(",", ":"))
    state["interruptions"][0]["arguments_text"] = text
    state["messages"][-1]["tool_calls"][0][1] = text
    return state


def refused(agent: a.Agent, model: a.ScriptedModel, state: Any, match: str, **kw: Any) -> None:
    with pytest.raises(a.UserError, match=match):
        a.run_sync(a.resume(agent, state, True, **kw))
    assert ran == [] and model.requests == []


@pytest.mark.parametrize("key", ["the-wrong-key", b"the-wrong-key", "the-right-ke", KEY + " "])
def test_a_wrong_key_is_refused(signed, key):
    refused(*support(), signed, "signature does not match", key=key)


def test_no_key_is_refused_with_what_to_pass(signed):
    refused(*support(), signed, r"signed; pass resume\(\.\.\., key=\.\.\.\)")


def test_a_state_edited_then_re_signed_with_another_key_is_refused(signed):
    forged = json.loads(json.dumps(seal(edited(signed), key="the-attacker-s-key")))
    refused(*support(), forged, "signature does not match", key=KEY)


def test_a_state_edited_with_its_old_signature_kept_is_refused(signed):
    forged = json.loads(json.dumps(seal(edited(signed))))
    forged["integrity"]["signature"] = signed["integrity"]["signature"]
    refused(*support(), forged, "signature does not match", key=KEY)


def test_a_state_edited_with_its_signature_stripped_is_refused_when_the_key_is_given(signed):
    forged = json.loads(json.dumps(seal(edited(signed))))
    assert "signature" not in forged["integrity"]
    refused(*support(), forged, "not signed", key=KEY)


@pytest.mark.parametrize("signature", [None, "", 0, ["x"], {"x": 1}, "0" * 64])
def test_a_signature_replaced_by_anything_else_is_refused(signed, signature):
    forged = copy.deepcopy(signed)
    forged["integrity"]["signature"] = signature
    refused(*support(), forged, "signature|not signed", key=KEY)


def test_an_edit_without_resealing_is_refused_before_the_signature_is_read(signed):
    refused(*support(), edited(signed), "changed after to_state", key=KEY)


def test_the_right_key_runs_exactly_the_call_shown(signed):
    agent, model = support()

    result = a.run_sync(a.resume(agent, signed, True, key=KEY.encode()))

    assert result.ok and ran == [{"order": "7", "amount": 40}]
    assert model.requests[0].tool_results == ["refunded 40 on 7"]


def test_the_forgeries_above_are_coherent_only_the_key_stops_them(signed):
    # The documented rule (docs/pause-and-resume.md): an unsigned state is protected against
    # accidents, not people. A signature stripped and the state resealed passes a resume that
    # is not given the key, so the key is what a program resuming stored states must pass.
    forged = json.loads(json.dumps(seal(edited(signed))))
    result = a.run_sync(a.resume(support()[0], forged, True))
    assert result.ok and ran == [{"order": "7", "amount": 40000}]

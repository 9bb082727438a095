"""A handoff is reported as a handoff: no tool events or tool hooks for transfer_to_<x>,
on_handoff on the receiving agent, and Handoff(on_handoff=...) called when control passes."""

from __future__ import annotations

from pydantic import BaseModel

import agentnb as a


class Calls(a.Hooks):
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def on_tool_start(self, ctx, agent, tool_name, arguments) -> None:
        self.calls.append(f"tool_start:{tool_name}")

    async def on_tool_end(self, ctx, agent, tool_name, result_text) -> None:
        self.calls.append(f"tool_end:{tool_name}")

    async def on_handoff(self, ctx, source, target) -> None:
        self.calls.append(f"handoff:{source.name}->{target.name}")


@a.tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: paid"


def triage_and_billing() -> tuple[a.Agent, a.Agent]:
    billing = a.Agent("billing", "x", a.ScriptedModel([a.say("Refunded.")]))
    triage = a.Agent(
        "triage",
        "x",
        a.ScriptedModel([a.tool_call("lookup", order="7"), a.tool_call("transfer_to_billing")]),
        [lookup],
        handoffs=[billing],
    )
    return triage, billing


async def test_a_handoff_sends_no_tool_events_and_no_tool_hooks():
    triage, _ = triage_and_billing()
    hooks = Calls()

    events = [e async for e in a.run_streamed(triage, "Refund order 7", hooks=hooks)]

    tools = [e.name for e in events if isinstance(e, (a.ToolCallStarted, a.ToolCallEnded))]
    assert tools == ["lookup", "lookup"]
    assert hooks.calls == ["tool_start:lookup", "tool_end:lookup", "handoff:triage->billing"]
    handoffs = [e for e in events if isinstance(e, a.HandoffEvent)]
    assert [(e.source, e.target) for e in handoffs] == [("triage", "billing")]
    assert events[-1].result.output == "Refunded."


async def test_on_handoff_is_called_on_the_receiving_agent_not_the_source():
    triage, billing = triage_and_billing()
    triage.hooks, billing.hooks = Calls(), Calls()

    result = await a.run(triage, "Refund order 7")

    assert result.ok
    assert billing.hooks.calls == ["handoff:triage->billing"]
    assert triage.hooks.calls == ["tool_start:lookup", "tool_end:lookup"]


class Refund(BaseModel):
    order: str
    reason: str


async def test_a_handoff_s_on_handoff_gets_the_validated_input_when_control_passes():
    seen: list[tuple[object, Refund]] = []

    async def prepare(ctx, refund: Refund) -> None:
        seen.append((ctx.deps, refund))

    billing_model = a.ScriptedModel([a.say("Refunded.")])
    billing = a.Agent("billing", "x", billing_model)
    handoff = a.Handoff(billing, input_type=Refund, on_handoff=prepare)
    model = a.ScriptedModel(
        [
            a.tool_call("transfer_to_billing", order="7"),  # missing reason: re-asked, no call
            a.tool_call("transfer_to_billing", order="7", reason="late"),
        ]
    )
    triage = a.Agent("triage", "x", model, handoffs=[handoff])

    result = await a.run(triage, "Refund order 7", deps="db")

    assert result.ok and result.output == "Refunded."
    assert seen == [("db", Refund(order="7", reason="late"))]
    assert "invalid arguments" in model.requests[1].tool_results[0]


async def test_on_handoff_without_input_type_takes_the_context_and_may_end_the_run():
    def refuse(ctx) -> None:
        raise PermissionError("billing is closed")

    billing = a.Agent("billing", "x", a.ScriptedModel([a.say("never")]))
    triage = a.Agent(
        "triage",
        "x",
        a.ScriptedModel([a.tool_call("transfer_to_billing")]),
        handoffs=[a.Handoff(billing, on_handoff=refuse)],
    )

    result = await a.run(triage, "Refund me")

    assert not result.ok and isinstance(result.error, PermissionError)
    assert billing.model.requests == []


def test_on_handoff_of_the_wrong_shape_is_a_user_error():
    billing = a.Agent("billing", "x", a.ScriptedModel([a.say("x")]))
    try:
        a.Handoff(billing, input_type=Refund, on_handoff=lambda ctx: None)
    except a.UserError as exc:
        assert "(ctx, input)" in str(exc)
    else:
        raise AssertionError("no UserError")

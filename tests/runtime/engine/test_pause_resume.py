"""approver="pause": a run stops at calls needing approval; agentnb.resume goes on from its
JSON-able state, in this process or a new one, with trace, usage and scripts carried on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import agentnb as a

AGENT_DEFINITION = textwrap.dedent(
    """
    import agentnb as a

    refunds: list[str] = []

    @a.tool(needs_approval=True)
    def refund(order: str, amount: int) -> str:
        \"\"\"Refund an order.\"\"\"
        refunds.append(order)
        return f"refunded {amount} on {order}"

    @a.tool
    def lookup(order: str) -> str:
        \"\"\"Look an order up.\"\"\"
        return f"order {order}: paid 40"

    def build() -> tuple[a.Agent, a.ScriptedModel]:
        model = a.ScriptedModel([
            [a.tool_call("lookup", order="7"), a.tool_call("refund", order="7", amount=40)],
            a.say("Refunded 40 on order 7."),
        ])
        return a.Agent("support", "You help.", model, [lookup, refund]), model
    """
)
namespace: dict[str, object] = {}
exec(compile(AGENT_DEFINITION, "agent_definition", "exec"), namespace)
build = namespace["build"]
refunds: list[str] = namespace["refunds"]  # type: ignore[assignment]


def test_a_paused_run_lists_its_interruptions_and_runs_the_rest_of_the_turn():
    refunds.clear()
    agent, model = build()

    result = a.run_sync(agent, "Refund order 7", approver="pause")

    assert not result.ok and isinstance(result.error, a.RunPaused)
    (waiting,) = result.interruptions
    assert (waiting.tool, waiting.arguments) == ("refund", {"order": "7", "amount": 40})
    assert waiting.call_id and waiting.agent == "support"
    assert refunds == []  # not run
    assert result.messages[-1] == a.Message.tool(
        a.ToolCall("lookup", '{"order": "7"}', result.messages[-2].tool_calls[0].id),
        "order 7: paid 40",
    )  # the call that needed no approval ran
    assert len(model.requests) == 1
    json.dumps(result.to_state())  # JSON-able


async def test_resume_runs_approved_calls_and_continues_the_same_run():
    refunds.clear()
    agent, model = build()
    paused = await a.run(agent, "Refund order 7", approver="pause", run_id="r1")
    state = json.loads(json.dumps(paused.to_state()))

    result = await a.resume(agent, state, True)

    assert result.ok and result.output == "Refunded 40 on order 7."
    assert refunds == ["7"]
    assert model.requests[1].tool_results == ["order 7: paid 40", "refunded 40 on 7"]
    assert result.run_id == "r1"
    assert len(result.calls) == 2 and result.usage.requests == 2  # carried on
    assert [r.decision for r in result.approvals] == ["approved"]


def test_a_refused_call_is_told_to_the_model():
    refunds.clear()
    agent, model = build()
    paused = a.run_sync(agent, "Refund order 7", approver="pause")
    call_id = paused.interruptions[0].call_id

    result = a.run_sync(a.resume(agent, paused.to_state(), {call_id: False}))

    assert result.ok and refunds == []
    assert "call to refund rejected" in model.requests[1].tool_results[1]


def test_approvals_must_cover_every_waiting_call():
    agent, _ = build()
    paused = a.run_sync(agent, "Refund order 7", approver="pause")

    with pytest.raises(a.UserError, match="not a waiting call"):
        a.run_sync(a.resume(agent, paused.to_state(), {"call_x": True}))
    with pytest.raises(a.UserError, match="to_state"):
        a.run_sync(a.Agent("w", "x", a.ScriptedModel([a.say("ok")])), "go").to_state()


def test_a_paused_run_resumes_in_a_new_process(tmp_path):
    first = AGENT_DEFINITION + textwrap.dedent(
        """
        import json, sys
        agent, model = build()
        result = a.run_sync(agent, "Refund order 7", approver="pause")
        json.dump(result.to_state(), open(sys.argv[1], "w"))
        print(type(result.error).__name__, refunds)
        """
    )
    second = AGENT_DEFINITION + textwrap.dedent(
        """
        import json, sys
        agent, model = build()  # the same definition, a fresh script
        state = json.load(open(sys.argv[1]))
        result = a.run_sync(a.resume(agent, state, True))
        print(result.ok, result.output, refunds, len(result.calls), model.requests[0].tool_results)
        """
    )
    path = str(tmp_path / "state.json")
    env = {**os.environ, "AGENTNB_TOKENIZER": "off", "PYTHONPATH": os.getcwd()}
    outputs = []
    for script in (first, second):
        done = subprocess.run(
            [sys.executable, "-c", script, path],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout.strip())

    assert outputs[0] == "RunPaused []"
    assert outputs[1] == (
        "True Refunded 40 on order 7. ['7'] 2 ['order 7: paid 40', 'refunded 40 on 7']"
    )


def test_pause_inside_a_pattern_is_a_user_error():
    agent, model = build()
    patterns = [
        lambda: a.parallel([agent], "go", approver="pause"),
        lambda: a.chain([agent], "go", approver="pause"),
        lambda: a.verify_loop(agent, agent, "go", approver="pause"),
    ]
    for pattern in patterns:
        with pytest.raises(a.UserError, match="approver='pause'.*inside parallel"):
            a.run_sync(pattern())
    assert model.requests == []


def two_levels() -> tuple[a.Agent, a.ScriptedModel, a.ScriptedModel]:
    support, support_model = build()
    lead_model = a.ScriptedModel(
        [
            [a.tool_call("support", input="refund order 7"), a.tool_call("lookup", order="8")],
            a.say("Order 7 refunded."),
        ]
    )
    lookup = support.tools[0]
    return a.Agent("lead", "x", lead_model, [support, lookup]), lead_model, support_model


def test_a_pause_inside_a_sub_agent_is_part_of_the_state():
    refunds.clear()
    lead, _, _ = two_levels()

    paused = a.run_sync(lead, "go", approver="pause")

    assert isinstance(paused.error, a.RunPaused)
    (waiting,) = paused.interruptions
    assert (waiting.tool, waiting.agent, waiting.path) == ("refund", "support", "lead/support")
    state = json.loads(json.dumps(paused.to_state()))
    assert list(state["sub_agents"]) == ["lead/support"]
    assert refunds == []

    fresh, lead_model, support_model = two_levels()  # as in a new process
    result = a.run_sync(a.resume(fresh, state, {waiting.call_id: True}))

    assert result.ok and result.output == "Order 7 refunded.", result.error
    assert refunds == ["7"]
    # the sub-agent went on from its history: the approved call's result, then its answer
    assert support_model.requests[0].tool_results == ["order 7: paid 40", "refunded 40 on 7"]
    assert sorted(lead_model.requests[0].tool_results) == sorted(
        ["Refunded 40 on order 7.", "order 8: paid 40"]
    )
    assert len(result.calls) == 4  # lead, support, support, lead


def test_resume_takes_run_options_and_may_pause_again():
    refunds.clear()
    script = [
        a.tool_call("refund", order="1", amount=1),
        a.tool_call("refund", order="2", amount=2),
        a.say("both done"),
    ]
    agent, _ = build()
    agent.model = a.ScriptedModel(script)

    first = a.run_sync(agent, "go", approver="pause")
    second = a.run_sync(a.resume(agent, first.to_state(), True, approver="pause"))
    third = a.run_sync(a.resume(agent, second.to_state(), True))

    assert isinstance(second.error, a.RunPaused)
    assert third.ok and third.output == "both done" and refunds == ["1", "2"]
    assert len(third.calls) == 3


def test_two_waiting_calls_of_a_streamed_run_are_decided_one_by_one():
    refunds.clear()
    model = a.ScriptedModel(
        [
            [
                a.tool_call("refund", order="1", amount=1),
                a.tool_call("refund", order="2", amount=2),
            ],
            a.say("done"),
        ]
    )
    agent, _ = build()
    agent.model = model

    events = list(a.stream_sync(agent, "go", approver="pause"))
    paused = events[-1].result
    first, second = (i.call_id for i in paused.interruptions)
    result = a.run_sync(a.resume(agent, paused.to_state(), {first: True, second: False}))

    assert isinstance(paused.error, a.RunPaused) and not paused.ok
    assert result.ok and refunds == ["1"]
    assert model.requests[1].tool_results == [
        "refunded 1 on 1",
        "call to refund rejected: decided on resume",
    ]  # in the order of the calls


def test_a_run_paused_after_a_handoff_resumes_in_the_receiving_agent():
    def triage_and_billing() -> tuple[a.Agent, a.ScriptedModel]:
        agent, _ = build()
        billing_model = a.ScriptedModel(
            [a.tool_call("refund", order="9", amount=5), a.say("billing done")]
        )
        billing = agent.clone(name="billing", model=billing_model)
        triage_model = a.ScriptedModel([a.tool_call("transfer_to_billing")])
        return a.Agent("triage", "x", triage_model, handoffs=[billing]), billing_model

    triage, _ = triage_and_billing()
    paused = a.run_sync(triage, "go", approver="pause")
    state = json.loads(json.dumps(paused.to_state()))
    fresh, billing_model = triage_and_billing()

    result = a.run_sync(a.resume(fresh, state, True))

    assert paused.interruptions[0].agent == "billing" and state["agent"] == "billing"
    assert result.ok and result.output == "billing done" and result.last_agent.name == "billing"
    assert billing_model.requests[0].tool_results[-1] == "refunded 5 on 9"
    assert len(result.calls) == 3


def test_pauses_two_levels_down_and_at_a_sub_agent_s_own_approval():
    done: list[str] = []

    @a.tool(needs_approval=True)
    def act(x: str) -> str:
        """Act."""
        done.append(x)
        return f"did {x}"

    def hierarchy() -> a.Agent:
        inner_model = a.ScriptedModel([a.tool_call("act", x="1"), a.say("inner ok")])
        inner = a.Agent("inner", "x", inner_model, [act])
        middle_model = a.ScriptedModel([a.tool_call("inner", input="go"), a.say("middle ok")])
        middle = a.Agent("middle", "x", middle_model, [inner])
        lead_model = a.ScriptedModel([a.tool_call("middle", input="go"), a.say("lead ok")])
        return a.Agent("lead", "x", lead_model, [middle.as_tool(needs_approval=True)])

    first = a.run_sync(hierarchy(), "go", approver="pause")
    state = json.loads(json.dumps(first.to_state()))
    second = a.run_sync(a.resume(hierarchy(), state, True, approver="pause"))
    state = json.loads(json.dumps(second.to_state()))
    last = a.run_sync(a.resume(hierarchy(), state, True))

    assert [(i.tool, i.path) for i in first.interruptions] == [("middle", "lead")]
    assert [(i.tool, i.path) for i in second.interruptions] == [("act", "lead/middle/inner")]
    assert sorted(state["sub_agents"]) == ["lead/middle", "lead/middle/inner"]
    assert last.ok and last.output == "lead ok" and done == ["1"]
    assert [(r.tool, r.decision) for r in last.approvals] == [
        ("middle", "approved"),
        ("act", "approved"),
    ]
    assert len(last.calls) == 6  # lead, middle, inner (paused); inner, middle, lead

"""agentnb.resume fails closed: a resumed run does exactly what a person approved, nothing else.

Each test pauses a run, sends its state through JSON, edits it the way a careless or hostile
hand would, and asserts what ran (tools that record their calls) and that the outcome is a
`UserError` or a rejection the model reads, never a silent run. `seal` re-computes the digests
of an edited state, as anyone can for an unsigned one: what it gets past is the structural
checks, which must hold on their own.
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentnb as a
from agentnb.runtime.data.run_state import seal

ran: list[tuple[str, dict[str, Any]]] = []


@a.tool(needs_approval=True)
def refund(order: str, amount: int) -> str:
    """Refund an order."""
    ran.append(("refund", {"order": order, "amount": amount}))
    return f"refunded {amount} on {order}"


@a.tool(needs_approval=True)
def wipe_database(confirm: bool) -> str:
    """Wipe everything."""
    ran.append(("wipe_database", {"confirm": confirm}))
    return "wiped"


@a.tool
def lookup(order: str) -> str:
    """Look an order up."""
    ran.append(("lookup", {"order": order}))
    return f"order {order}: paid 40"


def support() -> tuple[a.Agent, a.ScriptedModel]:
    model = a.ScriptedModel(
        [
            [a.tool_call("lookup", order="7"), a.tool_call("refund", order="7", amount=40)],
            a.say("Refunded 40 on order 7."),
        ]
    )
    return a.Agent("support", "You help.", model, [lookup, refund, wipe_database]), model


def lead() -> tuple[a.Agent, a.ScriptedModel, a.ScriptedModel]:
    sub, sub_model = support()
    model = a.ScriptedModel([a.tool_call("support", input="refund order 7"), a.say("done")])
    return a.Agent("lead", "x", model, [sub, wipe_database]), model, sub_model


def paused_state(build: Any = support, **options: Any) -> tuple[dict[str, Any], a.RunResult]:
    """A paused run's state through JSON, and the paused result; ``ran`` cleared after."""
    agent = build()[0]
    paused = a.run_sync(agent, "Refund order 7", approver="pause", **options)
    assert isinstance(paused.error, a.RunPaused), paused.error
    ran.clear()
    return json.loads(json.dumps(paused.to_state())), paused


def resealed(state: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(seal(state)))


def refunds() -> list[dict[str, Any]]:
    return [args for name, args in ran if name != "lookup"]


# -- decisions are exact


def test_an_approval_that_says_no_rejects_and_the_model_reads_its_reason():
    state, paused = paused_state()
    agent, model = support()
    call_id = paused.interruptions[0].call_id

    result = a.run_sync(a.resume(agent, state, {call_id: a.Approval(False, "denied by Ana")}))

    assert result.ok and refunds() == []
    assert model.requests[-1].tool_results[-1] == "call to refund rejected: denied by Ana"
    (record,) = result.approvals
    assert (record.decision, record.reason, record.call_id) == (
        "rejected",
        "denied by Ana",
        call_id,
    )


@pytest.mark.parametrize(
    "decision", [(False, "why"), "no", "false", "reject", "0", 0, 1, None, [False], 0.0]
)
def test_anything_but_true_false_or_an_approval_is_a_user_error_naming_the_call(decision):
    state, paused = paused_state()
    call_id = paused.interruptions[0].call_id
    agent, model = support()

    with pytest.raises(
        a.UserError, match=f"decision for {call_id}.*True, False or agentnb.Approval"
    ):
        a.run_sync(a.resume(agent, state, {call_id: decision}))
    with pytest.raises(a.UserError, match="True, False"):
        a.run_sync(a.resume(agent, state, decision))
    assert ran == [] and model.requests == []


def test_a_dict_decides_every_waiting_call_and_only_those():
    state, paused = paused_state()
    call_id = paused.interruptions[0].call_id
    agent, model = support()

    for decisions, match in [
        ({}, "missing"),
        ({call_id: True, "call_9": True}, "'call_9' is not a waiting call"),
        ({call_id: True, ("support", call_id): True}, "decided twice"),
    ]:
        with pytest.raises(a.UserError, match=match):
            a.run_sync(a.resume(agent, state, decisions))
    assert ran == [] and model.requests == []


# -- what was shown is what runs


def test_arguments_edited_in_the_history_are_refused():
    state, paused = paused_state()
    calls = state["messages"][-2]["tool_calls"]
    calls[1][1] = json.dumps({"order": "7", "amount": 40000})
    agent, model = support()

    with pytest.raises(a.UserError, match="changed after to_state.*messages"):
        a.run_sync(a.resume(agent, state, True))
    with pytest.raises(a.UserError, match="other arguments in its history"):
        a.run_sync(a.resume(agent, resealed(state), True))
    assert ran == [] and model.requests == []


def test_shown_arguments_that_are_not_the_call_s_are_refused():
    state, _ = paused_state()
    state["interruptions"][0]["arguments"] = {"order": "7", "amount": 4}
    agent, _ = support()

    with pytest.raises(a.UserError, match="what was shown is not what would run"):
        a.run_sync(a.resume(agent, resealed(state), True))
    assert ran == []


def test_a_renamed_call_is_refused():
    state, _ = paused_state()
    state["messages"][-2]["tool_calls"][1][0] = "wipe_database"
    state["messages"][-2]["tool_calls"][1][1] = '{"confirm": true}'
    agent, _ = support()

    with pytest.raises(a.UserError, match="tool name"):
        a.run_sync(a.resume(agent, resealed(state), True))
    assert ran == []


def test_a_call_smuggled_under_the_waiting_call_s_id_is_refused():
    state, _ = paused_state()
    calls = state["messages"][-2]["tool_calls"]
    calls.append(["wipe_database", '{"confirm": true}', calls[1][2]])
    agent, _ = support()

    with pytest.raises(a.UserError, match="two unanswered calls with one id"):
        a.run_sync(a.resume(agent, resealed(state), True))
    assert ran == []


def test_an_unlisted_call_and_a_forged_sub_agents_key_are_refused_even_with_approvals_false():
    state, _ = paused_state()
    state["messages"][-2]["tool_calls"].append(["wipe_database", '{"confirm": true}', "call_x"])
    agent, _ = support()
    with pytest.raises(a.UserError, match="does not list as waiting"):
        a.run_sync(a.resume(agent, resealed(state), False))

    state["sub_agents"]["support/wipe_database"] = {
        "agent": "support",
        "turns": 1,
        "messages": [state["messages"][0]],
        "call_id": "call_x",
    }
    with pytest.raises(a.UserError, match="support/wipe_database"):
        a.run_sync(a.resume(agent, resealed(state), False))
    assert ran == []


def test_a_sub_agent_s_kept_history_is_checked_too():
    state, _ = paused_state(lead)
    (path,) = state["sub_agents"]
    kept = state["sub_agents"][path]["messages"]
    kept[-2]["tool_calls"][1][1] = json.dumps({"order": "7", "amount": 40000})
    agent, _, _ = lead()

    with pytest.raises(a.UserError, match="changed after to_state.*sub_agents"):
        a.run_sync(a.resume(agent, state, True))
    with pytest.raises(a.UserError, match="other arguments"):
        a.run_sync(a.resume(agent, resealed(state), True))
    assert ran == []


def test_the_approved_call_runs_as_shown_and_is_what_result_approvals_records():
    state, paused = paused_state(lead)
    (waiting,) = paused.interruptions
    agent, _, sub_model = lead()

    result = a.run_sync(a.resume(agent, state, {waiting.call_id: True}))

    assert result.ok, result.error
    assert refunds() == [{"order": "7", "amount": 40}]
    (record,) = result.approvals
    assert (record.tool, record.arguments, record.path, record.call_id) == (
        "refund",
        {"order": "7", "amount": 40},
        "lead/support",
        waiting.call_id,
    )
    assert not record.carried
    assert sub_model.requests[-1].tool_results[-1] == "refunded 40 on 7"


# -- the record and the limits are not taken from the state on trust


def test_forged_approvals_are_refused_or_shown_as_carried_and_approve_nothing():
    state, paused = paused_state()
    forged = {
        "tool": "wipe_database",
        "arguments": {"confirm": True},
        "who": "the security officer",
        "decision": "approved",
        "reason": "ok",
        "time": 0.0,
        "wait_s": 0.0,
        "path": "support",
        "call_id": "call_x",
        "carried": False,
    }
    state["approvals"].append(forged)
    agent, _ = support()

    with pytest.raises(a.UserError, match="approvals"):
        a.run_sync(a.resume(agent, state, False))

    result = a.run_sync(a.resume(agent, resealed(state), False))
    assert result.ok and ran == []
    carried = [r for r in result.approvals if r.who == "the security officer"]
    assert len(carried) == 1 and carried[0].carried  # marked: from the state, not this run
    assert [r.decision for r in result.approvals if not r.carried] == ["rejected"]


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("model_calls", -1000, "model_calls"),
        ("model_calls", 5, "disagree"),
        ("turns", -1, "turns"),
        ("turns", 99, "max_turns"),
    ],
)
def test_counters_must_be_non_negative_and_agree_with_the_state(field, value, match):
    state, _ = paused_state()
    state[field] = value
    agent, model = support()

    with pytest.raises(a.UserError, match=match):
        a.run_sync(a.resume(agent, resealed(state), True))
    assert ran == [] and model.requests == []


def test_counters_within_the_run_s_limits():
    state, _ = paused_state()
    agent, _ = support()
    state["usage"]["input_tokens"] = -5
    with pytest.raises(a.UserError, match="usage.input_tokens"):
        a.run_sync(a.resume(agent, resealed(state), True))

    state, _ = paused_state(lead)  # two model calls made: the lead's and the sub-agent's
    with pytest.raises(a.UserError, match="max_model_calls=1"):
        a.run_sync(a.resume(lead()[0], state, True, limits=a.Limits(max_model_calls=1)))
    assert ran == []
    spent = a.run_sync(a.resume(lead()[0], state, True, limits=a.Limits(max_model_calls=2)))
    assert isinstance(spent.error, a.BudgetExceeded)  # the carried calls count
    assert a.run_sync(a.resume(lead()[0], state, True, limits=a.Limits(max_model_calls=4))).ok


# -- every damaged state is a UserError


def _message(state: dict[str, Any]) -> dict[str, Any]:
    return state["messages"][-2]


DAMAGE = {
    "missing messages": lambda s: s.pop("messages"),
    "missing interruptions": lambda s: s.pop("interruptions"),
    "missing usage": lambda s: s.pop("usage"),
    "missing run_id": lambda s: s.pop("run_id"),
    "missing scripts": lambda s: s.pop("scripts"),
    "extra field": lambda s: s.update(extra=1),
    "extra field in a message": lambda s: _message(s).update(extra=1),
    "extra field in an interruption": lambda s: s["interruptions"][0].update(extra=1),
    "model_calls a string": lambda s: s.update(model_calls="1"),
    "turns a float": lambda s: s.update(turns=1.5),
    "turns a bool": lambda s: s.update(turns=True),
    "a message that is a string": lambda s: s["messages"].__setitem__(0, "hello"),
    "messages a dict": lambda s: s.update(messages={"0": s["messages"][0]}),
    "arguments a dict": lambda s: _message(s)["tool_calls"][1].__setitem__(1, {"order": "7"}),
    "a tool call of two parts": lambda s: _message(s)["tool_calls"][1].pop(),
    "an unknown role": lambda s: s["messages"][0].update(role="system"),
    "tool calls on a user message": lambda s: s["messages"][0].update(
        tool_calls=[["x", "{}", "c"]]
    ),
    "interruption arguments a string": lambda s: s["interruptions"][0].update(arguments="{}"),
    "interruption without call_id": lambda s: s["interruptions"][0].pop("call_id"),
    "no interruptions": lambda s: s.update(interruptions=[]),
    "interruption at another path": lambda s: s["interruptions"][0].update(path="elsewhere"),
    "usage requests negative": lambda s: s["usage"].update(requests=-1),
    "usage a list": lambda s: s.update(usage=[1, 2]),
    "a calls row with an unknown column": lambda s: s["calls"][0].update(cost=1),
    "a calls row with a string count": lambda s: s["calls"][0].update(chars_in="12"),
    "a calls row missing a column": lambda s: s["calls"][0].pop("latency_s"),
    "an approval row missing a field": lambda s: s["approvals"].append({"tool": "refund"}),
    "a negative script position": lambda s: s["scripts"].update(support=-1),
    "a script of an unknown agent": lambda s: s["scripts"].update(intruder=0),
    "an unknown agent": lambda s: s.update(agent="intruder"),
    "artifacts not text": lambda s: s.update(artifacts={"doc": 5}),
    "a wrong version": lambda s: s.update(agentnb_state=1),
    "an empty run id": lambda s: s.update(run_id=""),
    "a tool result for the waiting call": lambda s: s["messages"].append(
        {
            "role": "tool",
            "content": "refunded",
            "tool_calls": [],
            "tool_call_id": _message(s)["tool_calls"][1][2],
            "name": "refund",
            "generated": False,
        }
    ),
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_each_kind_of_damage_is_a_user_error_and_runs_nothing(kind):
    state, _ = paused_state()
    DAMAGE[kind](state)
    agent, model = support()

    for damaged in (state, resealed(state)):  # caught by the digest, and by the checks alone
        with pytest.raises(a.UserError):
            a.run_sync(a.resume(agent, damaged, True))
    assert ran == [] and model.requests == []


@pytest.mark.parametrize("state", [None, [], "state", {"agentnb_state": 2}, {}])
def test_what_is_not_a_state_is_a_user_error(state):
    agent, _ = support()
    with pytest.raises(a.UserError):
        a.run_sync(a.resume(agent, state, True))


def test_a_state_json_cannot_hold_is_a_user_error():
    state, _ = paused_state()
    state["input"] = float("nan")
    agent, _ = support()
    with pytest.raises(a.UserError, match="not JSON"):
        a.run_sync(a.resume(agent, state, True))


# -- signing


def test_a_signed_state_needs_its_key_and_refuses_edits_made_without_it():
    agent, _ = support()
    paused = a.run_sync(agent, "Refund order 7", approver="pause")
    signed = json.loads(json.dumps(paused.to_state(key="s3cret")))
    assert "s3cret" not in json.dumps(signed)
    fresh, _ = support()

    with pytest.raises(a.UserError, match="signed; pass resume"):
        a.run_sync(a.resume(fresh, signed, True))
    with pytest.raises(a.UserError, match="signature does not match"):
        a.run_sync(a.resume(fresh, signed, True, key="guess"))
    edited = copy.deepcopy(signed)
    edited["interruptions"][0]["arguments"]["amount"] = 4
    redone = json.loads(json.dumps(seal(edited)))
    redone["integrity"]["signature"] = signed["integrity"]["signature"]
    with pytest.raises(a.UserError, match="signature does not match"):
        a.run_sync(a.resume(fresh, redone, True, key="s3cret"))
    unsigned = json.loads(json.dumps(seal(edited)))
    with pytest.raises(a.UserError, match="not signed"):
        a.run_sync(a.resume(fresh, unsigned, True, key="s3cret"))
    assert ran[-1][0] == "lookup" and refunds() == []  # only the first run's lookup

    result = a.run_sync(a.resume(fresh, signed, True, key=b"s3cret"))
    assert result.ok and refunds() == [{"order": "7", "amount": 40}]


def test_to_state_and_resume_check_the_key():
    agent, _ = support()
    paused = a.run_sync(agent, "Refund order 7", approver="pause")
    for key in ("", b"", 5):
        with pytest.raises(a.UserError, match="key"):
            paused.to_state(key=key)  # type: ignore[arg-type]


def test_run_state_reads_and_writes_json():
    state, paused = paused_state()
    agent, _ = support()
    text = a.RunState(state).to_json()
    again = a.RunState.from_json(text)

    assert again.interruptions == paused.interruptions
    assert a.run_sync(a.resume(agent, again, True)).ok
    with pytest.raises(a.UserError, match="JSON"):
        a.RunState.from_json("{not json")
    with pytest.raises(a.UserError, match="JSON object"):
        a.RunState.from_json("[1]")


# -- honest resumes


def test_an_agent_tool_call_and_the_sub_agent_s_call_sharing_an_id_resume_once_each():
    def hierarchy() -> a.Agent:
        sub_model = a.ScriptedModel([a.tool_call("refund", order="7", amount=40), a.say("ok")])
        sub = a.Agent("support", "x", sub_model, [refund])
        model = a.ScriptedModel([a.tool_call("support", input="refund 7"), a.say("lead done")])
        return a.Agent("lead", "x", model, [sub.as_tool(needs_approval=True)])

    first = a.run_sync(hierarchy(), "go", approver="pause")
    second = a.run_sync(
        a.resume(hierarchy(), json.loads(json.dumps(first.to_state())), True, approver="pause")
    )
    (outer,), (inner,) = first.interruptions, second.interruptions
    assert outer.call_id == inner.call_id and outer.key != inner.key  # the ids collide
    ran.clear()

    last = a.run_sync(a.resume(hierarchy(), json.loads(json.dumps(second.to_state())), True))

    assert last.ok and last.output == "lead done", last.error
    assert refunds() == [{"order": "7", "amount": 40}]
    assert [(r.tool, r.carried) for r in last.approvals] == [
        ("support", True),
        ("refund", False),
    ]


def test_a_forced_tool_choice_is_released_after_a_resumed_tool_call_as_in_a_plain_run():
    settings = a.ModelSettings(tool_choice="required")

    def forced() -> tuple[a.Agent, a.ScriptedModel]:
        agent, model = support()
        return agent.clone(model_settings=settings), model

    plain_agent, plain_model = forced()
    a.run_sync(plain_agent, "go", approver=a.approve_all)
    state, _ = paused_state(forced)
    agent, model = forced()
    result = a.run_sync(a.resume(agent, state, True))

    plain = [r.settings.tool_choice for r in plain_model.requests]
    assert plain == ["required", "auto"]
    assert result.ok and [r.settings.tool_choice for r in model.requests] == ["auto"]


def test_turns_go_on_so_call_ids_stay_unique_and_max_turns_bounds_the_whole_run():
    def twice() -> tuple[a.Agent, a.ScriptedModel]:
        agent, model = support()
        model = a.ScriptedModel(
            [
                a.tool_call("refund", order="1", amount=1),
                a.tool_call("refund", order="2", amount=2),
                a.say("done"),
            ]
        )
        return agent.clone(model=model), model

    state, _ = paused_state(twice)
    agent, _ = twice()
    again = a.run_sync(a.resume(agent, state, True, approver="pause"))
    assert [i.call_id for i in again.interruptions] == ["call_2_0"]

    state, _ = paused_state(twice)
    agent, _ = twice()
    limited = a.run_sync(a.resume(agent, state, True, max_turns=1))
    assert isinstance(limited.error, a.MaxTurnsExceeded) and len(refunds()) == 1


def test_the_timeout_bounds_the_approved_calls_a_resume_runs_first():
    started = asyncio.Event()

    @a.tool(needs_approval=True)
    async def slow(order: str) -> str:
        """Slow."""
        started.set()
        await asyncio.sleep(30)
        ran.append(("slow", {"order": order}))
        return "late"

    def build() -> tuple[a.Agent, a.ScriptedModel]:
        model = a.ScriptedModel([a.tool_call("slow", order="1"), a.say("done")])
        return a.Agent("support", "x", model, [slow]), model

    state, _ = paused_state(build)
    agent, model = build()
    result = a.run_sync(a.resume(agent, state, True, timeout=0.2))

    assert started.is_set() and isinstance(result.error, a.RunTimeout)
    assert ran == [] and model.requests == []


def test_deps_and_artifacts_reach_the_resumed_calls_as_in_run():
    seen: list[Any] = []

    @a.tool(needs_approval=True)
    def act(ctx: a.ToolCallContext, order: str) -> str:
        """Act."""
        seen.append((ctx.run.deps, sorted(ctx.run.artifacts)))
        return "acted"

    def build() -> tuple[a.Agent, a.ScriptedModel]:
        model = a.ScriptedModel([a.tool_call("act", order="1"), a.say("done")])
        return a.Agent("support", "x", model, [act]), model

    state, _ = paused_state(build, artifacts={"doc": "text"})
    agent, _ = build()
    result = a.run_sync(a.resume(agent, state, True, deps={"db": 1}))

    assert result.ok and seen == [({"db": 1}, ["doc", "input"])]


# -- any edit at all


def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value: dict keys and list indexes, down to the leaves."""
    found = [here]
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, (*here, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _paths(v, (*here, i))
    return found


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=5,
)


def _mutate(state: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    state = copy.deepcopy(state)
    where = data.draw(st.sampled_from(_paths(state)[1:]))
    *parents, last = where
    holder: Any = state
    for step in parents:
        holder = holder[step]
    op = data.draw(st.sampled_from(["drop", "add", "retype", "change"]))
    current = holder[last]
    if op == "drop":
        del holder[last]
    elif op == "add" and isinstance(current, dict):
        current[data.draw(st.text(max_size=6))] = data.draw(_JSON)
    elif op == "add" and isinstance(current, list):
        current.append(data.draw(_JSON))
    elif op == "retype":
        holder[last] = data.draw(_JSON.filter(lambda v: type(v) is not type(current)))
    else:  # a value of the same kind, changed
        if isinstance(current, bool):
            holder[last] = not current
        elif isinstance(current, int):
            holder[last] = current + data.draw(st.sampled_from([-1000, -1, 1, 7]))
        elif isinstance(current, str):
            holder[last] = data.draw(st.sampled_from(["", "x", current + "x", "wipe_database"]))
        else:
            holder[last] = data.draw(_JSON)
    return state


@settings(max_examples=200, deadline=None)
@given(data=st.data(), reseal=st.booleans())
def test_any_edit_is_refused_or_runs_only_the_call_shown_and_approved(data, reseal):
    state, paused = paused_state()
    shown = paused.interruptions[0]
    edited = json.loads(json.dumps(_mutate(state, data)))
    if reseal:
        try:
            edited = json.loads(json.dumps(seal(edited)))
        except a.UserError:  # not even sealable: resume must refuse it too
            pass
    agent, _ = support()

    try:
        result = a.run_sync(a.resume(agent, edited, True))
    except a.UserError:
        assert ran == []
        return
    assert refunds() in ([], [shown.arguments])  # only what was shown, at most once
    decided = [r for r in result.approvals if not r.carried]
    assert all((r.tool, r.arguments) == (shown.tool, shown.arguments) for r in decided)

"""RunOptions: the keyword options of a run, checked once before anything starts."""

from __future__ import annotations

import pytest

from agentnb import Agent, Limits, ScriptedModel, UserError, run_sync, say
from agentnb.runtime import RunOptions


def _agent() -> Agent:
    return Agent("a", "Answer.", model=ScriptedModel([say("hi")]))


@pytest.mark.parametrize(
    "options",
    [
        {"max_turns": 0},
        {"max_turns": True},
        {"max_turns": "3"},
        {"timeout": -1},
        {"timeout": "5"},
        {"timeout": False},
        {"limits": {"max_depth": 1}},
        {"approver": "yes"},
        {"artifacts": {"input": "x"}},
        {"artifacts": ["x"]},
        {"run_id": ""},
        {"listeners": "print"},
        {"stream": "yes"},
    ],
)
def test_a_bad_option_is_a_user_error_before_the_run_starts(options: dict[str, object]) -> None:
    model = ScriptedModel([say("hi")])
    with pytest.raises(UserError):
        run_sync(Agent("a", "Answer.", model=model), "q", **options)
    assert model.requests == []


def test_an_unknown_option_is_named_with_the_ones_a_run_takes() -> None:
    with pytest.raises(UserError, match=r"max_turn\b.*a run takes .*max_turns"):
        run_sync(_agent(), "q", max_turn=3)


def test_timeout_is_a_shortcut_for_the_limits_timeout() -> None:
    options = RunOptions(limits=Limits(max_depth=1), timeout=2.5)
    assert options.run_limits == Limits(max_depth=1, timeout=2.5)
    result = run_sync(_agent(), "q", timeout=2.5, max_turns=2)
    assert result.ok and result.context is not None
    assert result.context.limits.timeout == 2.5 and result.context.max_turns == 2


# -- the patterns take the options of a run, defined once


def _recording_agent(name: str, replies: list[str]) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel([say(r) for r in replies])
    return Agent(name, "Answer.", model=model), model


def test_every_pattern_takes_every_run_option() -> None:
    import inspect

    import agentnb
    from agentnb.runtime.data.options import KEYWORDS, RunKeywords

    assert set(RunKeywords.__annotations__) == KEYWORDS  # the typed keywords are the options
    for fn in (agentnb.run, agentnb.parallel, agentnb.chain, agentnb.verify_loop, agentnb.judge):
        shown = inspect.signature(
            fn
        ).parameters  # listed from RunKeywords (tests/test_signatures.py)
        assert set(shown) >= KEYWORDS, fn.__name__
    assert agentnb.RunOptions is RunOptions


def test_parallel_takes_an_approver_run_id_max_turns_and_on_event() -> None:
    import agentnb

    agent, model = _recording_agent("a", ["hi"])
    seen: list[agentnb.Event] = []
    fan = run_sync(
        agentnb.parallel(
            [agent],
            "q",
            approver=agentnb.approve_all,
            run_id="fan-1",
            max_turns=1,
            on_event=seen.append,
        )
    )
    assert not fan.missing
    result = fan.results["a"]
    assert result.context is not None and result.context.run_id == "fan-1"
    assert result.context.max_turns == 1
    assert seen and model.requests[0].messages[0].content == "q"


def test_listeners_are_deprecated_once_per_call_and_still_told_of_every_span() -> None:
    import agentnb

    agent, _ = _recording_agent("a", ["hi"])
    seen: list[tuple[str, str]] = []
    with pytest.warns(DeprecationWarning, match=r"on_event=fn\(event\)") as warned:
        fan = run_sync(
            agentnb.parallel(
                [agent, agent.clone(name="b")],
                "q",
                listeners=[lambda event, span: seen.append((event, span.kind))],
            )
        )
    assert len(warned) == 1  # not once more for each run the pattern makes
    spans = [s.kind for r in fan.results.values() for s in r.spans]
    assert sorted(k for e, k in seen if e == "start") == sorted(spans)
    assert sorted(k for e, k in seen if e == "end") == sorted(spans)
    assert fan.results["a"].calls["ttft_s"].isna().all()  # listeners do not stream the calls


def test_verify_loop_takes_artifacts_and_deps() -> None:
    import agentnb

    writer, writer_model = _recording_agent("writer", ["draft"])
    verifier, _ = _recording_agent("verifier", ['{"outcome": "approved", "problems": []}'])
    outcome = run_sync(
        agentnb.verify_loop(
            writer, verifier, "Write.", artifacts={"brief": "the brief"}, deps={"k": 1}
        )
    )
    assert outcome.rounds[0].draft == "draft"
    sent = writer_model.requests[0].messages[0].content
    assert "brief (9 characters)" in sent  # the artifact was attached to the writer's run
    run = outcome.rounds[0].writer
    assert run.context is not None and run.context.deps == {"k": 1}


def test_a_pattern_names_an_unknown_option() -> None:
    import agentnb

    agent, _ = _recording_agent("a", ["hi"])
    with pytest.raises(UserError, match=r"approvr.*a run takes .*approver"):
        run_sync(agentnb.chain([agent], "q", approvr=agentnb.approve_all))  # type: ignore[call-arg]


def test_tool_and_as_tool_name_an_unknown_option() -> None:
    import agentnb

    def echo(x: int) -> int:
        """Echo."""
        return x

    with pytest.raises(UserError, match=r"max_result_char\b.*tool takes .*max_result_chars"):
        agentnb.tool(echo, max_result_char=3)  # type: ignore[call-arg]
    with pytest.raises(UserError, match=r"time_out\b.*as_tool takes .*timeout"):
        _agent().as_tool(time_out=3)  # type: ignore[call-arg]
    made = _agent().as_tool(timeout=2.0, max_result_chars=None)
    assert (made.timeout, made.max_result_chars) == (2.0, None)

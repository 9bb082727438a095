"""What a notebook user reads: every entry point lists its keywords (``inspect.signature``,
``help``, Jupyter's Shift-Tab), and they are the one definition's (`RunOptions`, the as-tool
options); the HTTP adapters take the same shared keywords; public names report ``agentnb``."""

from __future__ import annotations

import inspect
import pickle
from dataclasses import MISSING, fields

import pytest

import agentnb as a
from agentnb.measure import sweep
from agentnb.models.http.model import HTTPModel
from agentnb.runtime import RunOptions
from agentnb.runtime.data.options import AsToolOptions

RUN_ENTRY_POINTS = [
    a.run,
    a.run_sync,
    a.run_streamed,
    a.stream_sync,
    a.resume,
    a.parallel,
    a.chain,
    a.verify_loop,
    a.judge,
]


def _keywords(fn: object) -> dict[str, inspect.Parameter]:
    params = inspect.signature(fn).parameters.values()  # type: ignore[arg-type]
    assert not any(p.kind is p.VAR_KEYWORD for p in params), f"{fn} still shows **options"
    return {p.name: p for p in params if p.kind is p.KEYWORD_ONLY}


@pytest.mark.parametrize("fn", RUN_ENTRY_POINTS, ids=lambda f: f.__name__)
def test_each_entry_point_lists_the_run_options_with_their_defaults(fn):
    shown = _keywords(fn)
    own = {"timeout"} if fn is a.parallel else set()  # parallel's timeout is per branch

    for option in fields(RunOptions):
        if option.name in own:
            continue
        assert option.name in shown, f"{fn.__name__} does not show {option.name}"
        if (
            option.name
            not in inspect.signature(
                fn.__wrapped__ if hasattr(fn, "__wrapped__") else fn
            ).parameters
        ):
            assert shown[option.name].default == option.default
    assert "timeout" in str(inspect.signature(fn)) and "approver" in str(inspect.signature(fn))


def test_as_tool_lists_its_options_with_agent_tools_defaults():
    shown = _keywords(a.Agent.as_tool)
    defaults = {f.name: f.default for f in fields(a.AgentTool) if f.default is not MISSING}

    assert set(shown) == set(AsToolOptions.__annotations__)
    assert shown["max_result_chars"].default == defaults["max_result_chars"] == 20_000
    assert shown["needs_approval"].default is False
    assert "timeout" in inspect.signature(a.AgentTool.build).parameters


def test_the_listed_keywords_are_the_ones_a_run_accepts():
    model = a.ScriptedModel([a.say("hi")])
    result = a.run_sync(a.Agent("w", "x", model), "go", max_turns=3, timeout=5.0)

    assert result.ok and model.requests[0].messages[-1].content == "go"
    with pytest.raises(a.UserError, match="max_turnz"):
        a.run_sync(a.Agent("w", "x", a.ScriptedModel([a.say("hi")])), "go", max_turnz=3)  # type: ignore[call-overload]


@pytest.mark.parametrize(
    "adapter", [a.OpenAIModel, a.OpenAIResponsesModel, a.AnthropicModel], ids=lambda c: c.__name__
)
def test_every_http_adapter_takes_the_shared_keywords_with_the_same_defaults(adapter):
    shared = {
        name: p
        for name, p in inspect.signature(HTTPModel.__init__).parameters.items()
        if p.kind is p.KEYWORD_ONLY
    }
    taken = inspect.signature(adapter.__init__).parameters

    for name, p in shared.items():
        assert name in taken, f"{adapter.__name__} does not take {name}="
        if p.default is not inspect.Parameter.empty:
            assert taken[name].default == p.default, name


def test_a_responses_model_takes_max_response_chars():
    model = a.OpenAIResponsesModel("m", api_key="sk-test", max_response_chars=50)

    assert model.max_response_chars == 50
    with pytest.raises(a.UserError, match="max_response_chars"):
        a.OpenAIResponsesModel("m", api_key="sk-test", max_response_chars=0)


def test_public_names_report_agentnb_as_their_module():
    for name in ["Agent", "RunResult", "run", "tool", "Backoff", "Span", "Interruption", "sweep"]:
        assert getattr(a, name).__module__ == "agentnb", name
    assert "agentnb.runtime" not in repr(a.Agent) and "class 'agentnb.Agent'" in repr(a.Agent)

    result = a.run_sync(a.Agent("w", "x", a.ScriptedModel([a.say("hi")])), "go")
    data = pickle.dumps(result)
    assert b"agentnb\x94\x8c\tRunResult" in data and b"runtime.data.result" not in data
    assert pickle.loads(data).output == "hi"


def test_types_of_public_signatures_and_result_fields_are_at_the_top_level():
    for name in ["Backoff", "Span", "Interruption", "Transfer", "Say", "ToolChoices", "Replay"]:
        assert name in a.__all__ and isinstance(getattr(a, name), type), name


def test_a_module_is_never_named_like_the_function_its_face_exports():
    assert callable(sweep) and sweep is a.sweep
    from agentnb.measure import experiment, pareto
    from agentnb.patterns import chain, parallel

    assert all(inspect.isfunction(f) for f in (experiment, pareto, chain, parallel))

"""as_tool caps the answer handed back like a function tool: 20,000 characters by default."""

from __future__ import annotations

import agentnb as a
from agentnb.runtime.tools.function import DEFAULT_MAX_RESULT_CHARS, truncate


def _boss(sub: a.Agent, **options: object) -> tuple[a.Agent, a.ScriptedModel]:
    model = a.ScriptedModel([a.tool_call("writer", input="write"), a.say("done")])
    return a.Agent("boss", "x", model, tools=[sub.as_tool(**options)]), model  # type: ignore[arg-type]


def test_a_long_answer_is_cut_with_the_function_tools_note() -> None:
    long = "x" * (DEFAULT_MAX_RESULT_CHARS + 5)
    boss, model = _boss(a.Agent("writer", "Write.", a.ScriptedModel([a.say(long)])))
    assert a.run_sync(boss, "go").ok
    sent = model.requests[1].tool_results[0]
    assert sent == truncate(long, DEFAULT_MAX_RESULT_CHARS)
    assert sent.endswith("the limit is 20000]")


def test_the_cap_can_be_changed_or_lifted() -> None:
    long = "y" * 30
    for cap, expected in [(10, truncate(long, 10)), (None, long)]:
        sub = a.Agent("writer", "Write.", a.ScriptedModel([a.say(long)]))
        boss, model = _boss(sub, max_result_chars=cap)
        a.run_sync(boss, "go")
        assert model.requests[1].tool_results == [expected]

"""Rich display of runs: deterministic HTML and text (nbval compares both), the tree, the cost."""

from __future__ import annotations

import re
from pathlib import Path

from nbval.plugin import get_sanitize_patterns

import agentnb as a
from agentnb.notebook import SANITIZE_RULES, result_html, result_text
from agentnb.notebook.display import fanout_html, fanout_text
from agentnb.patterns import parallel

SANITIZE_FILE = Path(__file__).parents[2] / "notebooks" / "nbval_sanitize.cfg"


def sanitize(text: str) -> str:
    """What nbval does with the shipped sanitize file."""
    for regex, replace in get_sanitize_patterns(SANITIZE_FILE.read_text()):
        text = re.sub(regex, replace, text)
    return text


def review_team(latency: float = 0.0) -> a.Agent:
    legal = a.Agent("legal", "You review law.", a.ScriptedModel([a.say("lawful")], latency=latency))
    tax = a.Agent(
        "tax", "You review tax.", a.ScriptedModel([a.say("no tax issue")], latency=latency)
    )
    script = [
        [a.tool_call("legal", input="clause 7"), a.tool_call("tax", input="clause 7")],
        a.say("approved"),
    ]
    return a.Agent("coord", "Coordinate.", a.ScriptedModel(script, latency=latency), [legal, tax])


def test_two_runs_render_identically_after_the_shipped_sanitize_rule():
    first = a.run_sync(review_team(latency=0.01), "review")
    second = a.run_sync(review_team(latency=0.02), "review")

    assert first.run_id != second.run_id
    for render in (result_html, result_text):
        one, two = render(first), render(second)
        assert one != two  # the durations differ ...
        assert sanitize(one) == sanitize(two)  # ... and are all the rule has to cover
        assert first.run_id not in one and "s1" not in re.findall(r"\bs\d+\b", one)
    assert get_sanitize_patterns(SANITIZE_FILE.read_text()) == list(SANITIZE_RULES)


def test_the_tree_shows_every_agent_and_tool_call_with_its_characters():
    result = a.run_sync(review_team(), "review")
    calls = result.calls
    text = result_text(result)

    # An agent's line covers its subtree (what delegating to it cost); the cost table is per agent.
    assert re.search(rf"agent coord · .* {result.chars_in:,} chars in", text)
    for path, chars in calls.groupby("path")["chars_in"].sum().items():
        if path != "coord":
            assert re.search(rf"agent {path.split('/')[-1]} · .* {chars:,} chars in", text)
        assert re.search(rf"\n  {path} +{(calls['path'] == path).sum()} +{chars:,} ", text)
    assert "tool legal · " in text and "tool tax · " in text
    html = result_html(result)
    assert html.count("<details") >= 4  # the tree, coord, legal's and tax's tool calls, the cost
    assert '<pre class="agentnb-output">approved</pre>' in html
    assert f"<td>total</td><td>4</td><td>{result.chars_in:,}</td>" in html
    assert "Tokens not counted" in html  # no tokenizer in tests: said, not estimated


def test_tokens_appear_per_node_when_a_tokenizer_counts_them(word_tokenizer):
    result = a.run_sync(review_team(), "review")
    text = result_text(result)

    first = result.calls.iloc[0]
    assert f"tokens {first['tokens_in']:,} → {first['tokens_out']:,}" in text
    assert "Tokens counted with: words." in text


def test_a_failed_run_shows_its_error_and_partial_answer():
    looping = a.ScriptedModel([a.ModelResponse("thinking", [a.ToolCall("nothing", "{}")])] * 2)
    result = a.run_sync(a.Agent("stuck", "Try.", looping, max_turns=2), "go")

    html, text = result_html(result), result_text(result)
    assert not result.ok
    assert "MaxTurnsExceeded" in html and "stuck used all 2 turns" in html
    assert "✘ stuck did not finish" in text and "error: MaxTurnsExceeded" in text
    assert "partial: thinking" in text


def test_the_ipython_text_form_is_the_tree():
    from IPython.lib.pretty import pretty

    result = a.run_sync(review_team(), "review")
    assert pretty(result) == result_text(result)
    assert result._repr_html_() == result_html(result)


def test_fanout_renders_every_branch_and_why_one_is_missing():
    fast = a.Agent("fast", "F.", a.ScriptedModel([a.say("done quickly")]))
    slow = a.Agent("slow", "S.", a.ScriptedModel([a.say("too late")], latency=5))
    fanout = a.run_sync(parallel([fast, slow], "check", timeout=0.05))

    text, html = fanout_text(fanout), fanout_html(fanout)
    assert text.startswith("FanOut ✘ 1 of 2 branches answered")
    assert "slow: did not answer within 0.05 s" in text and "done quickly" in text
    assert "did not answer within 0.05 s" in html and "<td>fast</td>" in html
    assert re.sub(r"\d+\.\d{3} s", "", sanitize(text)) == re.sub(r"\d+\.\d{3} s", "", text)


def test_a_fanout_displays_through_its_hooks():
    from IPython.lib.pretty import pretty

    agent = a.Agent("only", "O.", a.ScriptedModel([a.say("yes")]))
    fanout = a.run_sync(parallel([agent], "check"))
    assert pretty(fanout) == fanout_text(fanout)
    assert fanout._repr_html_() == fanout_html(fanout)


def test_counts_of_one_are_singular_in_the_header_and_the_tree():
    model = a.ScriptedModel([a.say("lawful")])
    result = a.run_sync(a.Agent("legal", "You review law.", model), "review")

    text, html = result_text(result), result_html(result)
    assert "legal answered · 1 model call · " in text and "1 model calls" not in text
    assert "legal answered · 1 model call · " in html and "1 model calls" not in html
    assert "1 turn · 1 model call · " in text
    assert model.requests[0].messages[-1].content == "review"

"""Token counts stay out of a run's time: counted when the rows are read, loaded before the
run's clock when the run itself needs them, and counted whatever the size of a text."""

from __future__ import annotations

import json
import os
import pickle
import random
import subprocess
import sys
from pathlib import Path

import pytest

import agentnb as a
from agentnb.models.canonical import dumps
from agentnb.trace import _tokenizers, tokens

pytest.importorskip("bpe_openai")  # imported here, where its DeprecationWarning is not an error

ROOT = Path(__file__).resolve().parents[2]

FRESH_PROCESS = """
import json, sys
import agentnb as a
agent = a.Agent("w", "Be brief.", a.ScriptedModel(["Fine."] * 2))
first = a.run_sync(agent, "hello world")
loaded = lambda: sorted({m.split(".")[0] for m in sys.modules} & {"bpe_openai", "tiktoken"})
during = loaded()
second = a.run_sync(agent, "hello world", timeout=5)
calls = first.calls
print(json.dumps({
    "during": during,
    "after": "bpe_openai" in loaded(),  # its compiled module at least
    "ok": first.ok and second.ok,
    "method": calls["tokens_method"].iloc[0],
    "tokens_in": int(calls["tokens_in"].iloc[0]),
}))
"""


def test_a_fresh_process_loads_no_tokenizer_during_its_runs():
    env = {**os.environ, "AGENTNB_TOKENIZER": "bpe-openai", "PYTHONPATH": str(ROOT)}
    env["PYTHONWARNINGS"] = "ignore::DeprecationWarning"
    out = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {
        "during": [],
        "after": True,
        "ok": True,
        "method": "bpe-openai:o200k_base (default)",
        "tokens_in": 2 + 3,
    }


def test_a_model_client_imports_its_sdk_when_made_not_in_its_first_call():
    code = (
        "import sys, agentnb; assert 'openai' not in sys.modules; "
        "agentnb.OpenAIModel('gpt-4o', api_key='x'); print('openai' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


async def test_a_run_counts_nothing_until_its_rows_are_read(word_tokenizer):
    model = a.ScriptedModel([a.say("three four five")])
    result = await a.run(a.Agent("w", "be brief", model), "hello there")
    assert word_tokenizer == [] and result.trace.call_rows[0].pending is not None

    assert result.calls["tokens_in"].iloc[0] == 4
    assert sorted(word_tokenizer) == ["be brief", "hello there", "three four five"]
    assert result.trace.spans[-1].attrs["tokens_in"] == 4  # the tree shows it too


async def test_a_hook_that_reads_rows_sees_their_tokens_during_the_run(word_tokenizer):
    seen: list[tuple[int, int]] = []

    class CostLine(a.Hooks):
        async def on_model_end(self, ctx, agent, response, call):
            seen.append((call["tokens_in"], len(word_tokenizer)))

    model = a.ScriptedModel([a.say("three four five")])
    await a.run(a.Agent("w", "be brief", model), "hello there", hooks=CostLine())
    assert seen == [(4, 3)]


async def test_a_token_budget_still_counts_during_the_run(word_tokenizer):
    model = a.ScriptedModel([a.say("one two three four five six")])
    result = await a.run(a.Agent("w", "one two", model), "three", limits=a.Limits(max_tokens=5))
    assert not result.ok and "Token budget" in str(result.error)
    assert "words" in str(result.error)


def test_a_budget_loads_the_tokenizer_when_it_is_made_not_in_a_run(monkeypatch):
    monkeypatch.setenv("AGENTNB_TOKENIZER", "bpe-openai")
    tokens.set_tokenizer(None)
    loads: list[str] = []
    real = _tokenizers.load
    monkeypatch.setattr(_tokenizers, "load", lambda *a_, **k: loads.append(a_[1]) or real(*a_, **k))
    worker = a.Agent("worker", "Be brief.", a.ScriptedModel(["Fine."]))
    tool = worker.as_tool(max_tokens=1_000)
    assert loads == ["o200k_base"]
    a.run_sync(
        a.Agent(
            "boss", "Delegate.", a.ScriptedModel([a.tool_call(tool.name, input="x"), "ok"]), [tool]
        ),
        "go",
    )
    assert loads == ["o200k_base"]


async def test_rows_pickle_with_their_counts(word_tokenizer):
    result = await a.run(a.Agent("w", "be brief", a.ScriptedModel(["a b"])), "hello there")
    row = pickle.loads(pickle.dumps(result.trace.call_rows[0]))
    assert row.pending is None and (row.tokens_in, row.tokens_out) == (4, 2)


# -- texts of any size ---------------------------------------------------------------------------

TEN_MB = 10_000_000


@pytest.fixture
def bpe() -> None:
    tokens.set_tokenizer("bpe-openai")


def _big(seed: int) -> str:
    words = ["lorem", "ipsum", "dolor", "sit", "amet,", "consectetur\n", "adipiscing", "elit."]
    rnd = random.Random(seed)
    return " ".join(rnd.choice(words) for _ in range(TEN_MB // 6))[:TEN_MB]


def test_a_ten_megabyte_input_tool_result_and_answer_are_counted(bpe):
    text = _big(1)

    @a.tool(max_result_chars=None)
    def fetch(url: str) -> str:
        """Fetch a page."""
        return text

    model = a.ScriptedModel([a.tool_call("fetch", url="x"), text])
    result = a.run_sync(a.Agent("w", "Be brief.", model, [fetch]), text)
    assert result.ok and len(model.requests[1].messages[-1].content or "") == TEN_MB
    calls = result.calls
    assert len(calls) == 2 and calls["status"].tolist() == ["ok", "ok"]
    encode = _tokenizers.load("bpe-openai", "o200k_base")
    assert encode is not None
    whole = _tokenizers.in_pieces(text, encode)
    spec = encode(dumps(fetch.spec.as_dict()))
    assert calls["tokens_in"].iloc[0] == whole + 3 + spec  # the input, "Be brief.", the spec
    assert calls["tokens_out"].iloc[1] == whole
    assert calls["tokens_in"].iloc[1] > 2 * whole  # the input and the tool result


def test_counting_in_pieces_gives_the_count_of_the_whole(bpe):
    encode = _tokenizers.load("bpe-openai", "o200k_base")
    assert encode is not None
    rnd = random.Random(5)
    pieces = ["a", "bb", "ccc", "日本", "x1", "\n", "  ", "don't", "!!", "123456"]
    for _ in range(50):
        text = " ".join(rnd.choice(pieces) for _ in range(400))
        size = rnd.randint(60, 300)  # each piece has a single space to cut at
        assert _tokenizers.in_pieces(text, encode, size) == encode(text), (text, size)


def test_a_text_without_spaces_past_the_encoders_limit_is_counted(bpe):
    encode = _tokenizers.load("bpe-openai", "o200k_base")
    assert encode is not None
    text = "ab" * 1_500_000
    assert encode(text) == 1_000 * encode("ab" * 1_500)


async def test_a_tokenizer_that_fails_leaves_the_rows_readable():
    def broken(text: str) -> int:
        raise RuntimeError("no vocabulary")

    tokens.set_tokenizer(broken, "mine")
    result = await a.run(a.Agent("w", "be brief", a.ScriptedModel(["a b"])), "hello there")
    row = result.calls.iloc[0]
    assert result.ok and row["tokens_method"] == "unavailable (RuntimeError)"
    assert row["chars_in"] > 0


def test_a_run_with_a_token_budget_loads_its_tokenizer_before_its_clock_starts(monkeypatch):
    monkeypatch.setenv("AGENTNB_TOKENIZER", "bpe-openai")
    tokens.set_tokenizer(None)
    order: list[str] = []
    real = _tokenizers.load
    monkeypatch.setattr(
        _tokenizers, "load", lambda *a_, **k: order.append("load") or real(*a_, **k)
    )
    agent = a.Agent("w", "Be brief.", a.ScriptedModel(["Fine."]))
    result = a.run_sync(
        agent,
        "hello",
        limits=a.Limits(max_tokens=1_000),
        on_event=lambda event: order.append(type(event).__name__),
        stream=False,
    )
    assert result.ok and order[0] == "load" and order.count("load") == 1
    assert order[1] == "SpanStarted"  # the run's span: the first event of the run

"""cache_estimate on hand-built request sequences with known shared prefixes (one token per
word, from the ``word_tokenizer`` fixture), and money with and without caching."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import agentnb as a
from agentnb.measure.prices import add_cost
from agentnb.trace import tokens
from agentnb.trace.history import HistoryTally


def words(n: int, word: str = "w") -> str:
    return " ".join([word] * n)


def calls(requests, model="gpt-4o", run="r1", *, overlap=False) -> pd.DataFrame:
    """The calls frame of ``requests`` sent one after the other by one agent."""
    tally, rows = HistoryTally(), []
    for i, request in enumerate(requests):
        tokens.request_tokens(request, tally, model)
        ended = i + (5.0 if overlap else 0.5)  # overlap: every call still runs when the next starts
        rows.append(
            {
                "run_id": run,
                "span_id": f"s{i}",
                "model": model,
                "started": float(i),
                "ended": ended,
                "prefix": tally.prefix,
            }
        )
    return pd.DataFrame(rows)


def turns(system_words: int, *sizes: int) -> list[a.ModelRequest]:
    """One request per turn: the history grows by a message of each size in ``sizes``."""
    system = words(system_words, "s")
    history: list[a.Message] = []
    out = []
    for i, size in enumerate(sizes):
        role = "user" if i % 2 == 0 else "assistant"
        history.append(a.Message(role, words(size, f"m{i}")))
        out.append(a.ModelRequest(system, list(history)))
    return out


def estimate(frame, provider="openai", **options) -> list[float]:
    return list(a.cache_estimate(frame, provider, **options)["tokens_in_cached_est"])


def test_openai_caches_nothing_below_1024_shared_tokens(word_tokenizer):
    assert estimate(calls(turns(1000, 10, 20, 30))) == [0, 0, 1024]  # 1010 < 1024; 1030 -> 1024


@pytest.mark.parametrize(
    ("system", "cached"),
    [(1024, 1024), (1151, 1024), (1152, 1152), (1279, 1152), (1280, 1280), (2000, 1920)],
)
def test_openai_counts_the_shared_prefix_in_128_token_steps(word_tokenizer, system, cached):
    # turn 2 shares turn 1's whole request: the system prompt and its first message (0 words)
    frame = calls(turns(system, 0, 7))
    assert estimate(frame) == [0, cached]


def test_the_rule_is_made_of_arguments(word_tokenizer):
    frame = calls(turns(300, 10, 20))
    assert estimate(frame) == [0, 0]
    assert estimate(frame, minimum=256, step=32) == [0, 288]  # 310 shared tokens


def test_a_different_system_prompt_shares_nothing(word_tokenizer):
    first = turns(1500, 10)
    second = [a.ModelRequest(words(1500, "t"), list(first[0].messages))]
    assert estimate(pd.concat([calls(first), calls(second)], ignore_index=True)) == [0, 0]


def test_runs_have_their_own_cache_unless_earlier_runs_are_passed_in(word_tokenizer):
    first = calls(turns(1500, 10), run="r1")
    again = calls(turns(1500, 10), run="r2")
    assert estimate(again) == [0]
    assert estimate(again, earlier=first) == [1408]  # 1510 shared, in 128-token steps


def test_a_request_sent_while_the_same_prefix_is_still_being_processed_is_not_cached(
    word_tokenizer,
):
    assert estimate(calls(turns(1500, 10, 20), overlap=True)) == [0, 0]


def test_anthropic_auto_breakpoints_write_each_turn_and_read_the_previous_one(word_tokenizer):
    frame = a.cache_estimate(calls(turns(1100, 10, 50), "claude-sonnet-4"), "anthropic")
    assert list(frame["tokens_in_cached_est"]) == [0, 1110]
    assert list(frame["tokens_in_cache_write_est"]) == [1110, 50]


def test_anthropic_minimum_depends_on_the_model_and_breakpoints_can_be_none(word_tokenizer):
    haiku = calls(turns(1100, 10, 50), "claude-3-5-haiku")  # 2,048 tokens at least
    assert estimate(haiku, "anthropic") == [0, 0]
    assert estimate(haiku, "anthropic", minimum=1000) == [0, 1110]
    sonnet = calls(turns(1100, 10, 50), "claude-sonnet-4")
    assert estimate(sonnet, "anthropic", breakpoints=None) == [0, 0]


def test_anthropic_looks_back_a_limited_number_of_parts_before_a_breakpoint(word_tokenizer):
    sizes = [10] + [1] * 25  # 25 messages arrive between the two requests
    requests = turns(1100, *sizes)
    frame = calls([requests[0], requests[-1]], "claude-sonnet-4")
    assert estimate(frame, "anthropic") == [0, 1100]  # only the system prompt's breakpoint
    assert estimate(frame, "anthropic", lookback=30) == [0, 1110]


def test_the_trace_keeps_one_fingerprint_per_message_not_copies_of_histories(word_tokenizer):
    frame = calls(turns(10, 1, 2, 3, 4))
    chains = [p.parts() for p in frame["prefix"]]
    assert [len(c) for c in chains] == [3, 4, 5, 6]  # tools, system, then one per message
    for shorter, longer in zip(chains, chains[1:]):
        assert all(x is y for x, y in zip(shorter, longer))  # the same objects, shared
    assert chains[-1][-1].total == 10 + 1 + 2 + 3 + 4


async def test_a_run_records_the_chain_and_without_a_tokenizer_there_is_no_estimate():
    result = await a.run(a.Agent("w", "Be brief.", a.ScriptedModel(["Fine."])), "hello")
    assert result.calls["prefix"].iloc[0] is None
    assert math.isnan(a.cache_estimate(result)["tokens_in_cached_est"].iloc[0])


def test_bad_arguments_are_refused_at_once(word_tokenizer):
    frame = calls(turns(10, 1))
    with pytest.raises(a.UserError, match="'openai' or 'anthropic'"):
        a.cache_estimate(frame, "gemini")  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match="step must be"):
        a.cache_estimate(frame, step=0)


def test_money_with_and_without_caching_and_the_reported_figure_beside_the_estimate():
    prices = a.Prices()
    frame = pd.DataFrame(
        [
            {
                "span_id": "s1",
                "model": "gpt-4o",
                "tokens_method": "provider",
                "provider_tokens_in": 2_000_000,
                "provider_tokens_out": 100_000,
                "tokens_in_cached": 1_000_000,
                "tokens_in_cache_write": math.nan,
                "tokens_in_cached_est": 1_024_000,
                "tokens_in_cache_write_est": 0,
            },
            {
                "span_id": "s2",
                "model": "claude-sonnet-4",
                "tokens_method": "provider",
                "provider_tokens_in": 2_000_000,
                "provider_tokens_out": 0,
                "tokens_in_cached": 1_000_000,
                "tokens_in_cache_write": 500_000,
                "tokens_in_cached_est": math.nan,
                "tokens_in_cache_write_est": math.nan,
            },
        ]
    )
    costs = add_cost(frame, prices)
    gpt, claude = costs.iloc[0], costs.iloc[1]
    assert gpt["cost"] == pytest.approx(2 * 2.50 + 0.1 * 10.00)
    assert gpt["cost_cached"] == pytest.approx(1 * 2.50 + 1 * 1.25 + 0.1 * 10.00)
    assert gpt["cost_cached_est"] == pytest.approx(0.976 * 2.50 + 1.024 * 1.25 + 1.0)
    assert claude["cost"] == pytest.approx(2 * 3.00)
    assert claude["cost_cached"] == pytest.approx(0.5 * 3.00 + 1 * 0.30 + 0.5 * 3.75)
    assert math.isnan(claude["cost_cached_est"])  # no estimate was made for it


def test_prices_carry_cache_prices_with_their_source():
    prices = a.Prices()
    assert prices.lookup("gpt-4o-mini").cached_input == 0.075
    assert prices.lookup("gpt-4o-mini").cache_write == 0.15  # OpenAI: a write costs the input
    assert prices.lookup("claude-sonnet-4").cache_write == 3.75
    prices.add("mine", input=1.0, output=2.0, cached_input=0.1, source="ours", as_of="2026-01")
    assert prices.lookup("mine").cached_input == 0.1
    with pytest.raises(a.UserError, match="cached_input price"):
        prices.add("bad", input=1, output=1, cached_input=-1, source="x", as_of="2026")


async def test_tables_in_tokens_and_with_caching(word_tokenizer):
    from agentnb import scenarios

    results = {"generalist": await scenarios.generalist()}
    results.update({f"k={k}": await scenarios.review_hierarchy(k) for k in (1, 2)})

    table = a.cost_table(results, unit="tokens")
    assert list(table["multiplier"]) == list(table["tokens_in"] / table["tokens_in"].iloc[0])

    parts = a.breakdown(results, unit="tokens")
    columns = [f"tokens_in_{c}" for c in ("system", "tools", "user", "assistant", "tool_args")]
    columns.append("tokens_in_tool_results")
    assert (parts[columns].sum(axis=1) == parts["tokens_in"]).all()  # components add up
    assert (parts["tokens_in_tools"] > 0).iloc[1:].all()

    prices = a.Prices(defaults=False).add(
        "coordinator", input=1.0, output=2.0, cached_input=0.1, source="test", as_of="2026"
    )
    for name in ("generalist", "reviewer"):
        prices.add(name, input=1.0, output=2.0, cached_input=0.1, source="test", as_of="2026")
    money = a.cost_table(results, prices=prices, caching="openai")
    assert {"tokens_in_cached_est", "cost", "cost_cached_est"} <= set(money.columns)
    assert (money["cost_cached_est"] <= money["cost"]).all()
    assert "cost_cached" not in money  # no provider reported cached tokens


def test_chains_pickle_without_deep_recursion_and_keep_sharing(word_tokenizer):
    import pickle

    frame = calls(turns(10, *([1] * 1000)))  # histories of up to 1,000 messages
    last, earlier = frame["prefix"].iloc[-1], frame["prefix"].iloc[-200]
    back_last, back_earlier = pickle.loads(pickle.dumps([last, earlier]))
    assert back_last == last and back_last.parts() == last.parts()
    assert back_last.parts()[600] is back_earlier.parts()[600]  # still one chain, shared

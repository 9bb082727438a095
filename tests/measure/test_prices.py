"""Prices: a cost only from a known price and a real token count; otherwise NaN and the reason."""

from __future__ import annotations

import math

import pytest

import agentnb as a
from agentnb.measure.prices import DEFAULT_PRICES, add_cost
from agentnb.models.scripted import usage


def test_lookup_accepts_spec_strings_and_snapshots_and_never_guesses():
    prices = a.Prices()
    mini = prices.lookup("gpt-4o-mini")
    assert mini is not None and (mini.input_per_million, mini.output_per_million) == (0.15, 0.60)
    assert prices.lookup("openai:gpt-4o-mini") is mini
    assert prices.lookup("gpt-4o-mini-2024-07-18") is mini
    assert prices.lookup("gpt-4o").input_per_million == 2.50  # not gpt-4o-mini's price
    assert prices.lookup("gpt-5-imaginary") is None
    assert prices.lookup("scripted") is None
    assert "gpt-4.1-nano" in prices and "llama3" not in prices


def test_every_entry_shows_its_source_and_date():
    table = a.Prices().table()
    assert list(table.columns) == [
        "model",
        "input_per_million",
        "output_per_million",
        "cached_input_per_million",
        "cache_write_per_million",
        "currency",
        "source",
        "as_of",
    ]
    assert len(table) == len(DEFAULT_PRICES)
    assert table["source"].str.startswith("https://").all()
    assert table["as_of"].str.match(r"^\d{4}-\d{2}(-\d{2})?$").all()


def test_users_extend_the_table_with_a_cited_price():
    prices = a.Prices({"local-llama": (0.0, 0.0)}, source="our own GPU", as_of="2025-06-01")
    prices.add("gpt-4o-mini", input=0.10, output=0.40, source="our contract", as_of="2025-07")
    assert prices.lookup("local-llama").cited == "our own GPU (2025-06-01)"
    assert prices.lookup("gpt-4o-mini").input_per_million == 0.10
    assert len(a.Prices(defaults=False)) == 0

    with pytest.raises(a.UserError, match="source= and as_of="):
        a.Prices({"x": (1.0, 2.0)})
    with pytest.raises(a.UserError, match="needs a source"):
        prices.add("y", input=1.0, output=1.0, source="", as_of="2025")
    with pytest.raises(a.UserError, match=">= 0"):
        prices.add("y", input=-1.0, output=1.0, source="s", as_of="2025")


def _run(model_name: str, reply: a.ModelResponse) -> a.RunResult:
    model = a.ScriptedModel([reply], name=model_name)
    return a.run_sync(a.Agent("agent", "Answer.", model), "question")


def test_provider_usage_gives_the_cost():
    result = _run("gpt-4o-mini", a.ModelResponse(text="ok", usage=usage(2_000, 500)))
    row = add_cost(result.calls).iloc[0]

    assert row["cost_in"] == pytest.approx(2_000 * 0.15 / 1e6)
    assert row["cost_out"] == pytest.approx(500 * 0.60 / 1e6)
    assert row["cost"] == pytest.approx(0.0006)
    assert row["cost_tokens"] == "provider"
    assert row["price_source"] == "https://openai.com/api/pricing/ (2024-10-01)"
    assert row["cost_note"] is None


def test_a_tokenizer_count_is_used_when_the_provider_reports_none(word_tokenizer):
    result = _run("gpt-4o-mini", a.ModelResponse(text="one two three"))
    row = add_cost(result.calls).iloc[0]
    assert row["cost_tokens"] == "words"
    assert row["cost"] == pytest.approx((row["tokens_in"] * 0.15 + 3 * 0.60) / 1e6)


def test_without_tokens_or_price_the_cost_is_nan_and_says_why():
    no_tokens = add_cost(_run("gpt-4o-mini", a.ModelResponse(text="ok")).calls).iloc[0]
    assert math.isnan(no_tokens["cost"])
    assert no_tokens["cost_note"].startswith("tokens unavailable (tokens_method='unavailable')")

    no_price = add_cost(_run("scripted", a.ModelResponse(text="ok", usage=usage(10, 1))).calls)
    assert math.isnan(no_price["cost"].iloc[0])
    assert no_price["cost_note"].iloc[0].startswith("no price for model 'scripted': add one")
    assert no_price["price_source"].iloc[0] is None


def test_cost_table_adds_the_cost_per_run_and_its_source():
    def run(model_name: str, tokens: int | None) -> a.RunResult:
        reply = a.ModelResponse(text="ok", usage=usage(tokens, 100) if tokens else a.Usage())
        return _run(model_name, reply)

    table = a.cost_table(
        {
            "mini": run("gpt-4o-mini", 1_000_000),
            "unknown": run("scripted", 10),
            "no tokens": run("gpt-4o", None),
        },
        prices=a.Prices(),
    )

    assert table["configuration"].tolist() == ["mini", "unknown", "no tokens"]
    assert table["cost"].iloc[0] == pytest.approx(0.15 + 100 * 0.60 / 1e6)
    assert table["cost"].iloc[1:].isna().all()
    assert table["cost_note"].iloc[0] is None
    assert "no price for model 'scripted'" in table["cost_note"].iloc[1]
    assert "tokens unavailable" in table["cost_note"].iloc[2]
    assert table["price_source"].tolist()[0] == "https://openai.com/api/pricing/ (2024-10-01)"

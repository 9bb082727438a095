"""A provider's usage that is not a count (a gateway's ``"lots"``, a negative number, a bool)
is read as "not reported", never carried into the run's sums, where it would end the run with
a raw ``TypeError``."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

import agentnb as a
from agentnb.models.providers.anthropic import wire as anthropic_wire
from agentnb.models.providers.openai import wire as chat_wire
from agentnb.models.providers.openai_responses import wire as responses_wire

NOT_COUNTS = ["lots", -3, True, 2.5, None, [7]]


@pytest.mark.parametrize("value", NOT_COUNTS)
def test_chat_completions_usage_that_is_not_a_count_is_not_reported(value: Any) -> None:
    usage = chat_wire.usage_from_wire(
        NS(
            prompt_tokens=value,
            completion_tokens=value,
            prompt_tokens_details=NS(cached_tokens=value),
            completion_tokens_details=NS(reasoning_tokens=value),
        )
    )
    assert usage == a.Usage(None, None, 1, None, None, None)


@pytest.mark.parametrize("value", NOT_COUNTS)
def test_responses_usage_that_is_not_a_count_is_not_reported(value: Any) -> None:
    usage = responses_wire.usage_from_wire(
        NS(
            input_tokens=value,
            output_tokens=value,
            input_tokens_details=NS(cached_tokens=value),
            output_tokens_details=NS(reasoning_tokens=value),
        )
    )
    assert usage == a.Usage(None, None, 1, None, None, None)


def _anthropic_usage(**usage: Any) -> a.Usage:
    message = NS(content=[NS(type="text", text="fine")], stop_reason="end_turn", usage=NS(**usage))
    request = a.ModelRequest("be brief", [a.Message.user("go")])
    return anthropic_wire.response_from_wire(message, request, "tool").usage


@pytest.mark.parametrize("value", NOT_COUNTS)
def test_anthropic_usage_that_is_not_a_count_is_not_reported(value: Any) -> None:
    usage = _anthropic_usage(
        input_tokens=value,
        output_tokens=value,
        cache_read_input_tokens=value,
        cache_creation_input_tokens=value,
    )
    assert usage == a.Usage(None, None, 1, None, None, None)


def test_anthropic_input_counts_its_cache_reads_and_writes_and_skips_what_is_not_a_count() -> None:
    counted = _anthropic_usage(
        input_tokens=10, output_tokens=4, cache_read_input_tokens=5, cache_creation_input_tokens=2
    )
    assert (counted.input_tokens, counted.output_tokens, counted.cached_input_tokens) == (17, 4, 5)
    garbled = _anthropic_usage(
        input_tokens=10,
        output_tokens=4,
        cache_read_input_tokens="x",
        cache_creation_input_tokens=-1,
    )
    assert (garbled.input_tokens, garbled.cached_input_tokens, garbled.cache_write_tokens) == (
        10,
        None,
        None,
    )


def test_a_huge_count_is_kept_as_it_is() -> None:
    usage = chat_wire.usage_from_wire(NS(prompt_tokens=10**20, completion_tokens=0))
    assert (usage.input_tokens, usage.output_tokens) == (10**20, 0)

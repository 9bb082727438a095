"""The rules HTTP adapters share: a deadline per attempt (whole, and idle between the pieces
of a stream), and what a failed attempt reads as."""

from __future__ import annotations

import asyncio
import math

import pytest

import agentnb as a
from agentnb.models import Backoff
from agentnb.models.http.attempt_limit import AttemptTimeout, Deadline
from agentnb.models.http.rules import Failure, is_loopback


async def pieces(gaps: list[float]):
    for i, gap in enumerate(gaps):
        await asyncio.sleep(gap)
        yield i


async def test_a_deadline_bounds_a_whole_attempt():
    with pytest.raises(AttemptTimeout) as caught:
        await Deadline(0.05).run(asyncio.sleep(10))

    assert caught.value.limit == "timeout"
    assert Failure.of(caught.value, None, 0.05).message == (
        "no complete reply within the timeout of 0.05 s"
    )


async def test_a_deadline_lets_an_attempt_s_own_timeout_error_through():
    async def fails() -> None:
        raise TimeoutError("its own")

    with pytest.raises(asyncio.TimeoutError, match="its own"):
        await Deadline(10).run(fails())


async def test_a_stream_is_bounded_between_pieces_and_as_a_whole():
    deadline = Deadline(10, idle=0.05)
    got = []
    with pytest.raises(AttemptTimeout) as caught:
        async for item in deadline.each(pieces([0, 0, 10])):
            got.append(item)
    assert got == [0, 1] and caught.value.limit == "idle"
    assert "nothing came for 0.05 s" in Failure.of(caught.value, None, 10).message

    got = []
    with pytest.raises(AttemptTimeout) as caught:
        async for item in Deadline(0.1, idle=1).each(pieces([0.04] * 10)):
            got.append(item)
    assert 0 < len(got) < 10 and caught.value.limit == "timeout"


async def test_a_stream_within_its_limits_is_passed_through():
    assert [x async for x in Deadline(None, idle=None).each(pieces([0, 0]))] == [0, 1]


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:11434/v1", True),
        ("http://127.0.0.1:8000", True),
        ("http://127.3.4.5", True),
        ("http://[::1]:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://10.0.0.5:8000", False),
        (None, False),
    ],
)
def test_loopback_addresses(url, local):
    assert is_loopback(url) is local


@pytest.mark.parametrize(
    "options",
    [{"total": -1}, {"max": math.nan}, {"initial": "1"}, {"jitter": 2}, {"multiplier": 0.5}],
)
def test_bad_backoffs_are_user_errors(options):
    with pytest.raises(a.UserError, match=r"Backoff\(\w+=...\) must be"):
        Backoff(**options)


@pytest.mark.parametrize(
    "option", [{"timeout": math.inf}, {"timeout": True}, {"params": 42}, {"api_key": 42}]
)
def test_bad_adapter_options_are_user_errors(option):
    with pytest.raises(a.UserError):
        a.OpenAIModel("m", base_url="http://127.0.0.1:9/v1", **option)

"""Prompt caching: how many input tokens a provider's cache would serve, from the trace alone.

A hierarchy resends the same tool specs, system prompts and growing histories on every turn.
Providers serve an exactly repeated prefix from a cache at a fraction of the input price. This
module estimates, per model call, how many input tokens that would be, from the fingerprints
the trace keeps of every request (`agentnb.trace.prefixes`) and the provider's published rule.
The rules and their sources are in docs/caching.md; their numbers are arguments, because
providers change them.

- ``"openai"``: automatic. A request's longest prefix that an earlier request (to the same
  model, finished before it started) also sent is cached if it is at least ``minimum`` tokens
  (1,024), counted in steps of ``step`` tokens (128) beyond that.
- ``"anthropic"``: explicit. Only prefixes ending at a ``cache_control`` breakpoint are
  written (if at least ``minimum`` tokens long, which depends on the model); a later request
  reads the longest written prefix found at one of its breakpoints or up to ``lookback``
  parts before one. ``breakpoints="auto"`` is what ``AnthropicModel(cache="auto")`` sends:
  after the tool specs, after the system prompt, and at the end of the request.

Counts are agentnb's token counts of the parts (``tokens_method``), so the estimate is as exact
as they are; the provider's chat format adds a few tokens per message (docs/tokens.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from ..errors import UserError
from ..trace.prefixes import Prefix
from .frames import calls_frame

if TYPE_CHECKING:
    import pandas as pd

Provider = Literal["openai", "anthropic"]

OPENAI_MINIMUM = 1024
OPENAI_STEP = 128
ANTHROPIC_LOOKBACK = 20
ANTHROPIC_MINIMUM: dict[str, int] = {
    "claude-opus-4-5": 4096,
    "claude-opus-4-6": 4096,
    "claude-haiku-4-5": 4096,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
}
"""Minimum cacheable prompt length by model (prefix of the name); others: 1,024 tokens
(Claude Sonnet 4 and 4.5, Opus 4 and 4.1, Sonnet 3.7). See docs/caching.md for the source."""
ANTHROPIC_DEFAULT_MINIMUM = 1024


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_minimum(minimum: Any) -> None:
    """``minimum`` is None, a whole number >= 0, or a mapping of model prefixes to such."""
    if minimum is None or (_count(minimum) and minimum >= 0):
        return
    if isinstance(minimum, Mapping) and all(
        isinstance(k, str) and _count(v) and v >= 0 for k, v in minimum.items()
    ):
        return
    raise UserError(
        "minimum must be the minimum cacheable length in tokens, a whole number >= 0, or a "
        f"dict of them by model name prefix ({{'claude-3-haiku': 2048}}), got {minimum!r}"[:300]
    )


def cache_estimate(
    data: Any,
    provider: Provider = "openai",
    *,
    earlier: Any = None,
    minimum: int | Mapping[str, int] | None = None,
    step: int = OPENAI_STEP,
    breakpoints: Literal["auto"] | None = "auto",
    lookback: int = ANTHROPIC_LOOKBACK,
) -> pd.DataFrame:
    """The calls frame of ``data`` (a result, a calls or sweep frame) with the estimate added.

    Adds ``tokens_in_cached_est`` (input tokens the provider's cache would serve) and
    ``tokens_in_cache_write_est`` (tokens written to it; 0 for OpenAI, which charges nothing
    extra), NaN for a call without fingerprints (no tokenizer). Each run has its own cache
    (calls are matched within their ``run_id`` and model); ``earlier``: results or frames
    whose calls were made before and warmed the cache.

    ``minimum``: the minimum cacheable length in tokens, one number or by model name prefix
    (default: 1,024 for OpenAI, `ANTHROPIC_MINIMUM` for Anthropic); ``step``: OpenAI's
    granularity; ``breakpoints``: for Anthropic, ``"auto"`` (as ``AnthropicModel(cache="auto")``
    sends) or ``None`` (no breakpoints: nothing cached); ``lookback``: how many parts before
    a breakpoint Anthropic looks for a cached prefix.
    """
    import pandas as pd

    if provider not in ("openai", "anthropic"):
        raise UserError(f"provider must be 'openai' or 'anthropic', got {provider!r}")
    if breakpoints not in ("auto", None):
        raise UserError(f"breakpoints must be 'auto' or None, got {breakpoints!r}")
    for label, value in (("step", step), ("lookback", lookback)):
        if not _count(value) or value < 1:
            raise UserError(f"{label} must be a whole number >= 1, got {value!r}")
    _check_minimum(minimum)
    frame = calls_frame(data).copy()
    if "prefix" not in frame:
        raise UserError(
            "cache_estimate needs the 'prefix' column of a calls frame (agentnb >= 0.2 traces, "
            f"with a tokenizer); the frame has {list(frame.columns)[:8]}..."
        )
    cache = _Cache(provider, minimum, step, breakpoints, lookback)
    for item in [] if earlier is None else (earlier if isinstance(earlier, list) else [earlier]):
        before = calls_frame(item)
        for row in before.sort_values("started").to_dict("records"):
            cache.estimate(row, row.get("model"), str(row.get("run_id")), warm=True)
    order = frame.sort_values("started", kind="stable").index
    cached = pd.Series(math.nan, index=frame.index, dtype=float)
    written = pd.Series(math.nan, index=frame.index, dtype=float)
    for index in order:
        row = frame.loc[index]
        got = cache.estimate(row, row.get("model"), str(row.get("run_id")))
        if got is not None:
            cached[index], written[index] = got
    frame["tokens_in_cached_est"] = cached
    frame["tokens_in_cache_write_est"] = written
    frame.attrs.update(calls_frame(data).attrs)
    return frame


class _Cache:
    """What a provider's cache holds, per (run, model), as calls are replayed in order."""

    def __init__(
        self,
        provider: Provider,
        minimum: int | Mapping[str, int] | None,
        step: int,
        breakpoints: str | None,
        lookback: int,
    ) -> None:
        self.provider = provider
        self.minimum = minimum
        self.step = step
        self.breakpoints = breakpoints
        self.lookback = lookback
        self.seen: dict[tuple[str, str], dict[bytes, float]] = {}
        """(run, model) -> prefix digest -> when the call that cached it ended."""
        self.warm: dict[str, dict[bytes, float]] = {}
        """model -> digests cached by earlier runs (usable at any time)."""

    def min_tokens(self, model: str) -> int:
        if isinstance(self.minimum, int):
            return self.minimum
        table: Mapping[str, int] = (
            self.minimum
            if self.minimum is not None
            else (ANTHROPIC_MINIMUM if self.provider == "anthropic" else {})
        )
        name = model.split(":", 1)[-1]
        for prefix, value in table.items():
            if name.startswith(prefix):
                return value
        return ANTHROPIC_DEFAULT_MINIMUM if self.provider == "anthropic" else OPENAI_MINIMUM

    def estimate(
        self, row: Any, model: Any, run: str, warm: bool = False
    ) -> tuple[int, int] | None:
        chain = row.get("prefix")
        if not isinstance(chain, Prefix):
            return None
        model = str(model)
        started = _number(row.get("started"), 0.0)
        ended = _number(row.get("ended"), started)
        memory = self.warm.setdefault(model, {}) if warm else self.seen.setdefault((run, model), {})
        known = self.warm.get(model, {})
        minimum = self.min_tokens(model)

        def cached(part: Prefix) -> bool:
            done = memory.get(part.digest)
            return part.digest in known or (done is not None and done <= started)

        if self.provider == "openai":
            shared = next((p.total for p in _walk(chain) if cached(p)), 0)
            hit = 0 if shared < minimum else shared - (shared - minimum) % self.step
            for part in _walk(chain):
                memory.setdefault(part.digest, ended)
            return hit, 0
        marks = _breakpoints(chain) if self.breakpoints == "auto" else []
        read = 0
        for mark in marks:
            for i, part in enumerate(_walk(mark)):
                if i > self.lookback:
                    break
                if cached(part):
                    read = max(read, part.total)
                    break
        longest = max((m.total for m in marks if m.total >= minimum), default=0)
        write = max(longest - read, 0)
        for mark in marks:
            if mark.total >= minimum:
                memory.setdefault(mark.digest, ended)
        return read, write


def _breakpoints(chain: Prefix) -> list[Prefix]:
    """Where ``cache="auto"`` marks a request: after the specs, the system prompt, the end."""
    parts = chain.parts()
    marks = [p for p in parts[:2] if p.tokens] + [parts[-1]]
    unique: dict[int, Prefix] = {id(p): p for p in marks}
    return list(unique.values())


def _walk(chain: Prefix) -> list[Prefix]:
    """The parts from the last one back to the first (longest prefix first)."""
    return list(reversed(chain.parts()))


def _number(value: Any, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(number) else number

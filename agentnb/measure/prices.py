"""Money: a price table per model, and a cost column computed from the tokens of each call.

Prices change and differ by contract, so every entry carries where it came from and when; a
model with no entry has no cost (``NaN``, with a note saying why), never a guessed one. The
same goes for tokens: a cost is only computed from a count — the provider's reported usage
first (what is billed), else agentnb's own tokenizer count — never from characters.

The built-in entries are list prices the providers published on the date shown, in USD per
million tokens. Check the source before relying on them, and add your own with
`Prices.add` (a negotiated rate, a local model at zero, a newer price).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import checks
from ..errors import UserError

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, slots=True)
class Price:
    """What one model costs, per million tokens."""

    model: str
    input_per_million: float | None
    """Price of a million input (prompt) tokens; ``None`` when not known."""
    output_per_million: float | None
    """Price of a million output (completion) tokens; ``None`` when not known."""
    source: str
    """Where the number comes from: a URL, a contract, "assumed for the workshop"."""
    as_of: str
    """When the number was read or published (``YYYY-MM-DD`` or ``YYYY-MM``)."""
    currency: str = "USD"
    cached_input_per_million: float | None = None
    """Price of a million input tokens served from the prompt cache; ``None``: not known."""
    cache_write_per_million: float | None = None
    """Price of a million input tokens written to the prompt cache; ``None``: billed as input
    (OpenAI charges nothing extra for its automatic cache)."""

    def __post_init__(self) -> None:
        for name in ("model", "source", "as_of", "currency"):
            checks.text(getattr(self, name), f"Price({name}=...)", empty=False)
        for name in (
            "input_per_million",
            "output_per_million",
            "cached_input_per_million",
            "cache_write_per_million",
        ):
            checks.number(getattr(self, name), f"Price({name}=...)", least=0, optional=True)

    @property
    def cached_input(self) -> float | None:
        """The cached-input price (per million tokens), ``None`` when not known."""
        return self.cached_input_per_million

    @property
    def cache_write(self) -> float | None:
        """The cache-write price (per million tokens); the input price when none is set."""
        if self.cache_write_per_million is not None:
            return self.cache_write_per_million
        return self.input_per_million

    @property
    def cited(self) -> str:
        """The source and date, as shown next to every cost."""
        return f"{self.source} ({self.as_of})"


_OPENAI = "https://openai.com/api/pricing/"
_ANTHROPIC = "https://www.anthropic.com/pricing#api"
_USD = "USD"

DEFAULT_PRICES: tuple[Price, ...] = (
    # OpenAI: cached input at half price (gpt-4o family, since prompt caching began on
    # 2024-10-01, https://openai.com/index/api-prompt-caching/) or a quarter (gpt-4.1 family);
    # writes cost nothing extra.
    Price("gpt-4o-mini", 0.15, 0.60, _OPENAI, "2024-10-01", _USD, 0.075),
    Price("gpt-4o", 2.50, 10.00, _OPENAI, "2024-10-02", _USD, 1.25),
    Price("gpt-4.1", 2.00, 8.00, _OPENAI, "2025-04-14", _USD, 0.50),
    Price("gpt-4.1-mini", 0.40, 1.60, _OPENAI, "2025-04-14", _USD, 0.10),
    Price("gpt-4.1-nano", 0.10, 0.40, _OPENAI, "2025-04-14", _USD, 0.025),
    # Anthropic: a cache read costs 0.1x the input price, a 5-minute cache write 1.25x
    # (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#pricing).
    Price("claude-3-5-haiku", 0.80, 4.00, _ANTHROPIC, "2024-11-04", _USD, 0.08, 1.00),
    Price("claude-sonnet-4", 3.00, 15.00, _ANTHROPIC, "2025-05-22", _USD, 0.30, 3.75),
)
"""List prices as published on the dates shown (USD per million tokens), with the prompt-cache
prices: ``cached_input`` (a cache hit) and ``cache_write`` (Anthropic only)."""

_PROVIDER = re.compile(r"^[a-z][a-z0-9_-]*:")
_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


class Prices:
    """A price table: model name -> `Price`. Starts from `DEFAULT_PRICES` unless ``defaults=False``.

    ``Prices({"my-model": (0.2, 0.8)}, source="our contract", as_of="2025-06-01")`` adds
    entries given as ``(input, output)`` pairs (or `Price` objects). Lookups accept spec
    strings (``openai:gpt-4o-mini``) and dated snapshots (``gpt-4o-mini-2024-07-18``).
    """

    def __init__(
        self,
        entries: Mapping[str, Price | tuple[float | None, float | None]] | None = None,
        *,
        defaults: bool = True,
        source: str | None = None,
        as_of: str | None = None,
    ) -> None:
        checks.mapping(entries, "Prices(entries)")
        checks.flag(defaults, "Prices(defaults=...)")
        checks.text(source, "Prices(source=...)", optional=True)
        checks.text(as_of, "Prices(as_of=...)", optional=True)
        self._prices: dict[str, Price] = {p.model: p for p in DEFAULT_PRICES} if defaults else {}
        for model, entry in (entries or {}).items():
            if isinstance(entry, Price):
                self._prices[model] = entry
                continue
            if not isinstance(entry, (tuple, list)) or len(entry) != 2:
                raise UserError(
                    f"Prices({{{model!r}: ...}}) takes an (input, output) pair of prices per "
                    f"million tokens, or an agentnb.Price; got {entry!r}"[:300]
                )
            if source is None or as_of is None:
                raise UserError(
                    "Prices given as (input, output) pairs need source= and as_of= (where the "
                    "numbers come from, and when): a cost without them cannot be checked."
                )
            inp, out = entry
            self.add(model, input=inp, output=out, source=source, as_of=as_of)

    def add(
        self,
        model: str,
        *,
        input: float | None,
        output: float | None,
        source: str,
        as_of: str,
        currency: str = "USD",
        cached_input: float | None = None,
        cache_write: float | None = None,
    ) -> Prices:
        """Add or replace a model's price (per million tokens); returns the table for chaining.

        ``cached_input``: the price of input served from the prompt cache (``None``: not
        known, so costs with caching stay empty); ``cache_write``: the price of input written
        to it (``None``: the input price).
        """
        for label, value in (
            ("input", input),
            ("output", output),
            ("cached_input", cached_input),
            ("cache_write", cache_write),
        ):
            if value is not None and (
                not isinstance(value, (int, float))
                or isinstance(value, bool)
                or not value >= 0  # NaN too
            ):
                raise UserError(f"{label} price for {model!r} must be >= 0 or None, got {value!r}")
        checks.text(model, "Prices.add(model)", empty=False)
        if not source or not as_of:
            raise UserError(f"The price of {model!r} needs a source and an as_of date")
        checks.text(source, "Prices.add(source=...)", empty=False)
        checks.text(as_of, "Prices.add(as_of=...)", empty=False)
        checks.text(currency, "Prices.add(currency=...)", empty=False)
        in_price = None if input is None else float(input)
        out_price = None if output is None else float(output)
        self._prices[model] = Price(
            model,
            in_price,
            out_price,
            source,
            as_of,
            currency,
            None if cached_input is None else float(cached_input),
            None if cache_write is None else float(cache_write),
        )
        return self

    def lookup(self, model: str | None) -> Price | None:
        """The price of ``model``, or ``None`` when the table has none (never a guess)."""
        if not model:
            return None
        name = str(model)
        for candidate in (name, _PROVIDER.sub("", name)):
            if candidate in self._prices:
                return self._prices[candidate]
            base = _SNAPSHOT.sub("", candidate)
            if base in self._prices:
                return self._prices[base]
        return None

    def table(self) -> pd.DataFrame:
        """The price table, one row per model, with its source and date."""
        import pandas as pd

        return pd.DataFrame(
            [
                {
                    "model": p.model,
                    "input_per_million": p.input_per_million,
                    "output_per_million": p.output_per_million,
                    "cached_input_per_million": p.cached_input_per_million,
                    "cache_write_per_million": p.cache_write_per_million,
                    "currency": p.currency,
                    "source": p.source,
                    "as_of": p.as_of,
                }
                for p in self._prices.values()
            ],
            columns=[
                "model",
                "input_per_million",
                "output_per_million",
                "cached_input_per_million",
                "cache_write_per_million",
                "currency",
                "source",
                "as_of",
            ],
        )

    def __contains__(self, model: object) -> bool:
        return isinstance(model, str) and self.lookup(model) is not None

    def __iter__(self) -> Iterator[Price]:
        return iter(self._prices.values())

    def __len__(self) -> int:
        return len(self._prices)

    def __repr__(self) -> str:
        return f"Prices({len(self)} models: {', '.join(self._prices)})"


COST_COLUMNS = (
    "cost_in",
    "cost_out",
    "cost",
    "cost_cached_est",
    "cost_cached",
    "currency",
    "cost_tokens",
    "price_source",
    "cost_note",
)
"""Columns `add_cost` appends: the costs, which token count they used, the cited price, and
``cost_note`` saying why a cost is missing (``None`` when it was computed).

``cost`` is every input token at the input price (no caching); ``cost_cached_est`` the same
call with the prompt cache `agentnb.cache_estimate` estimates (NaN without an estimate);
``cost_cached`` with the cached and cache-write tokens the provider reported (NaN where it
reported none)."""


def call_cost(row: Mapping[str, Any], prices: Prices) -> dict[str, Any]:
    """The cost of one model call (a row of ``result.calls``) as the `COST_COLUMNS`."""
    nan = math.nan
    out: dict[str, Any] = {
        "cost_in": nan,
        "cost_out": nan,
        "cost": nan,
        "cost_cached_est": nan,
        "cost_cached": nan,
        "currency": None,
        "cost_tokens": None,
        "price_source": None,
        "cost_note": None,
    }
    if _missing(row.get("span_id")) and "span_id" in row:
        out["cost_note"] = "no model call"
        return out
    if row.get("cached") is True:  # an experiment's response cache answered: nothing paid
        out.update(cost_in=0.0, cost_out=0.0, cost=0.0, cost_cached_est=0.0, cost_cached=0.0)
        out["cost_note"] = "answered from the response cache: not paid again"
        return out
    model = row.get("model")
    price = prices.lookup(model)
    tokens_in, tokens_out, method = _tokens(row)
    if price is None:
        out["cost_note"] = (
            f"no price for model {model!r}: add one with prices.add({model!r}, input=..., "
            "output=..., source=..., as_of=...)"
        )
        return out
    out.update(currency=price.currency, price_source=price.cited)
    if tokens_in is None:
        out["cost_note"] = (
            f"tokens unavailable (tokens_method={row.get('tokens_method')!r}): no provider usage "
            "and no tokenizer; install tiktoken's encodings or use an endpoint that reports usage"
        )
        return out
    out["cost_tokens"] = method
    out["cost_in"] = _times(tokens_in, price.input_per_million)
    out["cost_out"] = _times(tokens_out, price.output_per_million)
    out["cost"] = out["cost_in"] + out["cost_out"]
    for column, parts in (
        ("cost_cached_est", ("tokens_in_cached_est", "tokens_in_cache_write_est")),
        ("cost_cached", ("tokens_in_cached", "tokens_in_cache_write")),
    ):
        cached, written = _num(row.get(parts[0])), _num(row.get(parts[1]))
        if cached is not None or written is not None:
            cost_in = _cached_cost(tokens_in, cached or 0.0, written or 0.0, price)
            out[column] = cost_in + out["cost_out"]
    if math.isnan(out["cost"]):
        unknown = "input" if math.isnan(out["cost_in"]) else "output"
        out["cost_note"] = f"{unknown} price or token count unknown for {model!r}"
    return out


def add_cost(calls: pd.DataFrame, prices: Prices | None = None) -> pd.DataFrame:
    """A copy of a calls frame (or a sweep's) with the `COST_COLUMNS` appended."""
    import pandas as pd

    prices = prices if prices is not None else Prices()
    costs = [
        call_cost({str(k): v for k, v in row.items()}, prices) for row in calls.to_dict("records")
    ]
    extra = pd.DataFrame.from_records(costs, columns=list(COST_COLUMNS), index=calls.index)
    for col in ("currency", "cost_tokens", "price_source", "cost_note"):  # None stays None
        extra[col] = pd.Series([c[col] for c in costs], index=calls.index, dtype=object)
    frame = pd.concat([calls.drop(columns=[c for c in COST_COLUMNS if c in calls]), extra], axis=1)
    frame.attrs.update(calls.attrs)
    return frame


def _tokens(row: Mapping[str, Any]) -> tuple[float | None, float | None, str | None]:
    """The token count to bill: the provider's when reported, else agentnb's own count."""
    if not _missing(row.get("provider_tokens_in")):
        return float(row["provider_tokens_in"]), _num(row.get("provider_tokens_out")), "provider"
    method = row.get("tokens_method")
    if not _missing(row.get("tokens_in")) and method not in (None, "unavailable"):
        return float(row["tokens_in"]), _num(row.get("tokens_out")), str(method)
    return None, None, None


def _cached_cost(total: float, cached: float, written: float, price: Price) -> float:
    """Input cost when ``cached`` of ``total`` tokens are cache hits and ``written`` are
    cache writes (NaN when a price they need is unknown)."""
    plain = max(total - cached - written, 0.0)
    cost = _times(plain, price.input_per_million)
    if cached:
        cost += _times(cached, price.cached_input)
    if written:
        cost += _times(written, price.cache_write)
    return cost


def _times(tokens: float | None, per_million: float | None) -> float:
    if tokens is None or per_million is None:
        return math.nan
    return tokens * per_million / 1_000_000


def _num(value: Any) -> float | None:
    return None if _missing(value) else float(value)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))

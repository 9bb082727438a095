"""`PatternResult`: what the results of the patterns share, with one meaning for each name.

A pattern (a fan-out, a chain, a writer-verifier loop) makes several ordinary runs on one
clock. Its result reads them as one: ``calls`` is every run's call rows in one DataFrame with
key columns naming the part each row belongs to, ``spans`` every run's spans (as on a
`RunResult`: a list of `Span`), ``chars_in`` and ``model_calls`` their sums.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ..runtime import RunResult
from ..trace.spans import Span
from . import _runs

if TYPE_CHECKING:
    import pandas as pd


class PatternResult:
    """Base of `FanOut`, `ChainResult` and `VerifyResult`: their runs read as one.

    A subclass names its key columns (``key_columns``) and lists its runs by key (`parts`).
    """

    key_columns: ClassVar[tuple[str, ...]]
    """The columns that say which part a row of ``calls`` belongs to (``branch``, ``stage``...)."""

    def parts(self) -> Mapping[Any, RunResult]:
        """The runs of the pattern that started, in order, by key (a tuple for several columns)."""
        raise NotImplementedError

    @property
    def calls(self) -> pd.DataFrame:
        """One row per model call of every run: the key columns, then `CALL_COLUMNS`.
        Times are on the pattern's clock (seconds since it started)."""
        parts = self.parts()
        count = sum(r.model_calls for r in parts.values())
        cached = self.__dict__.get("_calls")
        if cached is None or cached[0] != count:  # rebuilt when calls were added since
            column = self.key_columns[0] if len(self.key_columns) == 1 else self.key_columns
            cached = (count, _runs.combine_calls(parts, column))
            self.__dict__["_calls"] = cached
        frame: pd.DataFrame = cached[1]
        return frame

    @property
    def spans(self) -> list[Span]:
        """Every span of every run, run by run, each in start order, on the pattern's clock."""
        return [s for r in self.parts().values() for s in r.spans]

    def spans_frame(self) -> pd.DataFrame:
        """The spans as a DataFrame (key columns first), for timelines."""
        return _runs.combine_spans(self.parts(), self.key_columns)

    @property
    def chars_in(self) -> int:
        """Characters sent over every run (see `agentnb.trace.sizes` for the rule)."""
        return sum(r.chars_in for r in self.parts().values())

    @property
    def model_calls(self) -> int:
        return sum(r.model_calls for r in self.parts().values())

"""The calls frame built from dtype blocks is the frame ``pd.DataFrame`` builds from the same
columns: values, dtypes and column order, on random columns of every kind a row holds."""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pandas.testing as pdt

from agentnb.trace._blocks import frame

KINDS = ["int", "float", "bool", "str", "int?", "float?", "str?", "none", "object", "big"]


def _column(kind: str, n: int, rnd: random.Random) -> tuple[object, ...]:
    def value() -> object:
        if kind.endswith("?") and rnd.random() < 0.3:
            return None
        base = kind.rstrip("?")
        if base == "int":
            return rnd.randint(-(2**40), 2**40)
        if base == "float":
            return rnd.choice([rnd.random(), math.nan, -0.0, 1e300])
        if base == "bool":
            return rnd.random() < 0.5
        if base == "str":
            return rnd.choice(["", "a", "coordinator/legal", "é\u2028", "None"])
        if base == "none":
            return None
        if base == "big":
            return rnd.choice([2**70, 1])
        return rnd.choice([object(), (1, 2), None, "x", 3])

    return tuple(value() for _ in range(n))


def test_blocks_give_the_frame_pandas_builds_on_random_columns():
    rnd = random.Random(3)
    for trial in range(300):
        n = rnd.randint(1, 12)
        kinds = [rnd.choice(KINDS) for _ in range(rnd.randint(1, 14))]
        names = [f"c{i}" for i in range(len(kinds))]
        values = [_column(kind, n, rnd) for kind in kinds]
        expected = pd.DataFrame(dict(zip(names, values)), columns=names)
        got = frame(names, values)
        pdt.assert_frame_equal(got, expected, check_exact=True)
        assert list(got.columns) == names, trial


def test_an_array_given_is_kept_as_it_is():
    got = frame(["a", "b"], [np.array([1.0, math.nan]), (1, 2)])
    assert got["a"].dtype == np.float64 and got["b"].dtype == np.int64
    assert math.isnan(got["a"].iloc[1])


def test_the_frame_takes_new_values_without_touching_its_siblings():
    # blocks stacked from several columns: writing one column leaves the others as they were
    got = frame(["a", "b"], [(1, 2), (3, 4)])
    got.loc[0, "a"] = 9
    assert got["b"].tolist() == [3, 4] and got["a"].tolist() == [9, 2]

"""A pandas DataFrame built from its columns one dtype block at a time.

Why this exists: ``pd.DataFrame({...})`` spends tens of microseconds on every column (it infers
the column's type, makes a block of it, then merges the blocks of one dtype), whatever the
number of rows. The calls table has forty columns, so reading a small run's rows cost more
than the run itself (issue 34; ``benchmarks/overhead.py``, "read ÷ the run's own time"). Here a
column whose values are all of one plain type (``int``, ``float``, ``bool``, ``str``) becomes
its array directly, the arrays of one dtype are stacked into one block, and the frame is made
from the blocks (``pandas.api.internals.create_dataframe_from_blocks``). Any other column (a
``None`` among numbers, objects) is left to pandas' own inference, so the dtypes are those
``pd.DataFrame`` gives; ``tests/trace/test_frame_blocks.py`` checks that on random columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def frame(columns: Sequence[str], values: Sequence[Sequence[Any]]) -> pd.DataFrame:
    """``pd.DataFrame(dict(zip(columns, values)), columns=columns)``, the same frame, built
    from blocks; ``values`` are the columns' values (a sequence each, all of one length)."""
    import numpy as np
    import pandas as pd

    try:
        from pandas.api.internals import create_dataframe_from_blocks
    except ImportError:  # a pandas older than this function: the plain constructor
        return pd.DataFrame(dict(zip(columns, values, strict=True)), columns=list(columns))
    stacks: dict[Any, tuple[list[int], list[Any]]] = {}
    blocks: list[tuple[Any, Any]] = []
    for place, column in enumerate(values):
        array = _array(column)
        if isinstance(array, np.ndarray):
            where, arrays = stacks.setdefault(array.dtype, ([], []))
            where.append(place)
            arrays.append(array)
        else:  # an extension array (str, nullable...) is a block of its own
            blocks.append((array, np.array([place], dtype=np.intp)))
    for where, arrays in stacks.values():
        blocks.append((np.vstack(arrays), np.array(where, dtype=np.intp)))
    rows = len(values[0]) if values else 0
    built: pd.DataFrame = create_dataframe_from_blocks(
        blocks, index=pd.RangeIndex(rows), columns=pd.Index(list(columns))
    )
    return built


def _array(values: Sequence[Any]) -> Any:
    """The column as the array ``pd.DataFrame`` would make of it."""
    import numpy as np
    import pandas as pd

    if isinstance(values, np.ndarray):
        return values
    kinds = set(map(type, values))
    kind = kinds.pop() if len(kinds) == 1 else None
    try:
        if kind is int:
            return np.array(values, dtype=np.int64)
        if kind is float:
            return np.array(values, dtype=np.float64)
        if kind is bool:
            return np.array(values, dtype=np.bool_)
    except OverflowError:  # an int past 64 bits: pandas decides
        pass
    if kind is str:
        dtype = _str_dtype()
        if isinstance(dtype, np.dtype):  # pandas before 3: text is object
            return np.array(values, dtype=object)
        return pd.array(values, dtype=dtype)
    inferred = pd.Series(values)
    if isinstance(inferred.dtype, np.dtype):
        return inferred.to_numpy()
    return inferred.array


@cache
def _str_dtype() -> Any:
    """The dtype pandas infers for a column of text (``str`` from pandas 3, else object)."""
    import pandas as pd

    return pd.Series(["text"]).dtype

"""Checks of arguments at the public boundary: one way to say what was given and what is accepted.

Every public constructor and run option of agentnb checks its numbers with these, so a mistake
raises `UserError` at once, in one line, the same way everywhere. Numbers given as text
(``"3"``) or as bools (``True``) are refused: they are almost always a slip, never a count.
"""

from __future__ import annotations

import math

from ..errors import UserError


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fail(where: str, accepted: str, value: object) -> UserError:
    return UserError(f"{where} must be {accepted}, got {value!r}")


def positive_int(value: object, where: str, *, optional: bool = True) -> None:
    """``value`` is an int >= 1 (or None when ``optional``); else `UserError`."""
    if value is None and optional:
        return
    if not _is_int(value) or value < 1:  # type: ignore[operator]
        raise _fail(where, "a positive integer" + (" or None" if optional else ""), value)


def non_negative_int(value: object, where: str) -> None:
    """``value`` is an int >= 0; else `UserError`."""
    if not _is_int(value) or value < 0:  # type: ignore[operator]
        raise _fail(where, "an integer >= 0", value)


def positive_seconds(value: object, where: str, *, optional: bool = True) -> None:
    """``value`` is a number of seconds > 0 (``inf`` included; None when ``optional``)."""
    if value is None and optional:
        return
    if not _is_number(value) or math.isnan(value) or not value > 0:  # type: ignore[arg-type, operator]
        raise _fail(where, "positive seconds" + (" or None" if optional else ""), value)

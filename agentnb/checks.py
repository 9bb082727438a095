"""Checks of arguments at the public boundary: one way to say what was given and what is accepted.

Every public constructor and run option of agentnb checks its arguments with these, so a
mistake raises `UserError` at once, in one line, the same way everywhere. Numbers given as
text (``"3"``) or as bools (``True``) are refused: they are almost always a slip, never a
count. NaN is never a number of anything; infinity only where "no bound" makes sense.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

from .errors import UserError

_SHOWN = 80
"""The most characters of a wrong value an error quotes (a DataFrame's repr is not one line)."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def shown(value: object) -> str:
    """``value`` as an error quotes it: its repr, on one line, cut short."""
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ must not hide the mistake being reported
        text = f"<{type(value).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def fail(where: str, accepted: str, value: object) -> UserError:
    """The error for ``value`` given as ``where``: ``"<where> must be <accepted>, got <value>"``."""
    return UserError(f"{where} must be {accepted}, got {shown(value)}")


def _or_none(accepted: str, optional: bool) -> str:
    return accepted + (" or None" if optional else "")


def positive_int(value: object, where: str, *, optional: bool = True) -> None:
    """``value`` is an int >= 1 (or None when ``optional``); else `UserError`."""
    if value is None and optional:
        return
    if not _is_int(value) or value < 1:  # type: ignore[operator]
        raise fail(where, _or_none("a positive integer", optional), value)


def non_negative_int(value: object, where: str, *, optional: bool = False) -> None:
    """``value`` is an int >= 0 (or None when ``optional``); else `UserError`."""
    if value is None and optional:
        return
    if not _is_int(value) or value < 0:  # type: ignore[operator]
        raise fail(where, _or_none("an integer >= 0", optional), value)


def integer(value: object, where: str, *, optional: bool = False) -> None:
    """``value`` is an int of any sign (a seed); else `UserError`."""
    if value is None and optional:
        return
    if not _is_int(value):
        raise fail(where, _or_none("an integer", optional), value)


def positive_seconds(
    value: object, where: str, *, optional: bool = True, infinite: bool = True
) -> None:
    """``value`` is a number of seconds > 0 (``inf`` included when ``infinite``; None when
    ``optional``); else `UserError`."""
    if value is None and optional:
        return
    if (
        not _is_number(value)
        or math.isnan(value)  # type: ignore[arg-type]
        or not value > 0  # type: ignore[operator]
        or (not infinite and math.isinf(value))  # type: ignore[arg-type]
    ):
        accepted = "positive seconds" if infinite else "positive, finite seconds"
        raise fail(where, _or_none(accepted, optional), value)


def seconds(value: object, where: str, *, infinite: bool = False) -> None:
    """``value`` is a number of seconds >= 0 (finite unless ``infinite``); else `UserError`."""
    if (
        not _is_number(value)
        or math.isnan(value)  # type: ignore[arg-type]
        or not value >= 0  # type: ignore[operator]
        or (not infinite and math.isinf(value))  # type: ignore[arg-type]
    ):
        raise fail(where, "seconds >= 0" + ("" if infinite else " (finite)"), value)


def number(
    value: object,
    where: str,
    *,
    least: float | None = None,
    most: float | None = None,
    optional: bool = False,
) -> None:
    """``value`` is a finite number within ``[least, most]``; else `UserError`."""
    if value is None and optional:
        return
    if (
        not _is_number(value)
        or not math.isfinite(value)  # type: ignore[arg-type]
        or (least is not None and value < least)  # type: ignore[operator]
        or (most is not None and value > most)  # type: ignore[operator]
    ):
        bounds = [
            f">= {least:g}" if least is not None else "",
            f"<= {most:g}" if most is not None else "",
        ]
        accepted = " and ".join(b for b in bounds if b)
        raise fail(where, _or_none(f"a number {accepted}".strip(), optional), value)


def text(
    value: object, where: str, *, optional: bool = False, empty: bool = True, quote: bool = True
) -> None:
    """``value`` is a str (non-blank unless ``empty``; None when ``optional``); else `UserError`.
    With ``quote=False`` the error names the value's type only (for what may be a secret)."""
    if value is None and optional:
        return
    if not isinstance(value, str) or (not empty and not value.strip()):
        accepted = _or_none("text" if empty else "non-empty text", optional)
        if not quote:
            raise UserError(f"{where} must be {accepted}, got a {type(value).__name__}")
        raise fail(where, accepted, value)


def flag(value: object, where: str, *, optional: bool = False) -> None:
    """``value`` is True or False (None when ``optional``); else `UserError`."""
    if value is None and optional:
        return
    if not isinstance(value, bool):
        raise fail(where, _or_none("True or False", optional), value)


def mapping(value: object, where: str, *, optional: bool = True) -> None:
    """``value`` is a dict (any mapping; None when ``optional``); else `UserError`."""
    if value is None and optional:
        return
    if not isinstance(value, Mapping):
        raise fail(where, _or_none("a dict", optional), value)


def function(value: object, where: str, *, what: str = "a function") -> None:
    """``value`` is callable; else `UserError` (``what`` says which function is wanted)."""
    if not callable(value):
        raise fail(where, what, value)


def one_of(value: Any, where: str, choices: Collection[object]) -> None:
    """``value`` is one of ``choices``; else `UserError` listing them."""
    try:
        ok = value in choices
    except TypeError:  # an unhashable value and a set of choices
        ok = False
    if not ok:
        raise fail(where, "one of " + ", ".join(repr(c) for c in choices), value)

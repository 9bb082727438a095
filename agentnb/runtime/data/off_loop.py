"""`off_loop`: a callback of the user's called so that it cannot stall the run's event loop.

Hooks, guardrails, instructions functions, approval checks and approvers may be plain
functions that block (a sleep, a request, a person at a prompt). Called on the event loop,
such a function stops everything on it, the run's own ``timeout`` included: the run would
end late and, worse, as a success. A plain function runs in a worker thread instead, as a
sync tool does; the run awaits it, so a timeout or a cancellation ends the run on time and
the thread is left to finish on its own. A coroutine function runs on the loop.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


async def off_loop(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, awaited when it is (or returns) an awaitable; a plain function runs in
    a worker thread (see the module docstring)."""
    if _is_async(fn):
        value = fn(*args)
    else:
        value = await asyncio.to_thread(_in_thread, fn, args)
        if isinstance(value, _Raised):
            raise value.error
    if inspect.isawaitable(value):
        value = await value
    return value


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        type(fn).__call__  # an object with an async __call__
    )


@dataclass(frozen=True, slots=True)
class _Raised:
    error: BaseException


def _in_thread(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """``fn(*args)`` in the worker thread. A `GeneratorExit` comes back as a value: through a
    future, asyncio would throw it into the task instead of reaching the run's handler."""
    try:
        return fn(*args)
    except GeneratorExit as exc:
        return _Raised(exc)

"""The key every fault and secret test uses, and the scan that proves it shows nowhere.

The key does not start with ``sk-``, so that only the scrubber's knowledge of the configured
key can hide it, and servers echo it whole and masked (first 8 and last 4 characters)."""

from __future__ import annotations

import json
import pickle
import traceback
import uuid
from pathlib import Path
from typing import Any

KEY = "zq-SECRET-" + uuid.uuid4().hex
MASKED = KEY[:8] + "*" * 24 + KEY[-4:]
LEAKS = (KEY, MASKED, KEY[:8])


def exception_texts(error: BaseException | None) -> list[str]:
    """str, repr, args and attributes of ``error`` and of every exception in its chain."""
    texts: list[str] = []
    seen: set[int] = set()
    todo = [error]
    while todo:
        exc = todo.pop()
        if exc is None or id(exc) in seen:
            continue
        seen.add(id(exc))
        texts += [str(exc), repr(exc), repr(exc.args), repr(getattr(exc, "__dict__", {}))]
        todo += [exc.__cause__, exc.__context__]
    return texts


def traceback_with_locals(error: BaseException | None) -> list[str]:
    """``error``'s traceback with every frame's local variables, as IPython's ``%xmode
    Verbose`` and error trackers show it."""
    if error is None:
        return []
    rendered = traceback.TracebackException.from_exception(error, capture_locals=True)
    return list(rendered.format())


def assert_no_key(model: Any, result: Any, *recordings: Path) -> None:
    """Fail if the key, whole or masked, is in anything a user can see, keep or send."""
    texts = [repr(model), str(model), repr(vars(model))]
    texts += [repr(result), *result.log_lines(), result.calls.to_csv(), repr(result.spans)]
    texts += [json.dumps(result.span_tree(), default=str), repr(result.messages)]
    texts += exception_texts(result.error)
    texts += traceback_with_locals(result.error)
    texts += [path.read_text(encoding="utf-8") for path in recordings if path.exists()]
    everything = "\n".join(texts)
    pickled = pickle.dumps(model) + pickle.dumps(result)  # a result pickles whole
    for leak in LEAKS:
        assert leak not in everything, f"{leak!r} shows in what agentnb shows or writes"
        assert leak.encode() not in pickled, f"{leak!r} is in a pickle"

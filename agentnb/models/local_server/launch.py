"""``python -m agentnb.models.local_server.launch PARENT_PID MODULE ARGS...``: llama-cpp-python's
server (``MODULE`` is ``llama_cpp.server``), tied to the process that started it.

`agentnb.models.local_server.model.LocalModel` starts the server through this module rather than as
``python -m llama_cpp.server`` directly, for two reasons:

- a server whose owner died without stopping it (a kernel killed, a test runner interrupted
  hard) stops by itself: a thread checks every half second that the process ``PARENT_PID`` is
  still its parent, and ends this process when it is not;
- it registers the chat format ``agentnb-chatml-function-calling`` (`TOOLS_FORMAT`):
  llama-cpp-python's ``chatml-function-calling``, whose template leaves every ``tool`` message
  out of the prompt (a model never sees a tool's result, so a coordinator never reads its
  sub-agents' answers), with each tool result shown to the model as a user turn that names
  the function it came from; and with the request's ``max_tokens`` (or `DEFAULT_LIMIT`)
  bounding every completion it makes: with ``tool_choice="auto"`` the stock format generates
  a tool's arguments and its message with no limit at all (``max_tokens=None``), so a small
  model writing whitespace into a JSON grammar runs until the context is full (minutes on a
  CPU). Everything else, the tool-call grammar included, is the stock format's.

``MODULE`` runs as ``python -m MODULE ARGS...`` would run it (tests run a stand-in server this
way); ``ARGS`` are the server's own command-line options.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys
import threading
import time
from typing import Any

TOOLS_FORMAT = "agentnb-chatml-function-calling"
STOCK_FORMAT = "chatml-function-calling"
DEFAULT_LIMIT = 512
"""Tokens one completion may generate when the request sets no ``max_tokens``."""


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)  # the owner is gone: nothing here is worth a clean shutdown


def shown_to_the_model(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with each tool result as a user turn the ChatML template writes out."""
    names = {
        call.get("id"): call.get("function", {}).get("name", "a function")
        for message in messages
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or []
    }
    shown = []
    for message in messages:
        if message.get("role") == "tool":
            name = names.get(message.get("tool_call_id"), "a function")
            text = f"Result of functions.{name}:\n{message.get('content') or ''}"
            shown.append({"role": "user", "content": text})
        else:
            shown.append(message)
    return shown


class Bounded:
    """A ``Llama`` whose completions generate at most ``limit`` tokens when asked for no limit."""

    def __init__(self, llama: Any, limit: int) -> None:
        self._llama = llama
        self._limit = limit

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llama, name)

    def create_completion(self, **kwargs: Any) -> Any:
        if kwargs.get("max_tokens") is None:
            kwargs["max_tokens"] = self._limit
        return self._llama.create_completion(**kwargs)


def register_tools_format() -> None:
    """Register `TOOLS_FORMAT` with llama-cpp-python (in this process)."""
    from llama_cpp import llama_chat_format as formats

    stock = formats.get_chat_completion_handler(STOCK_FORMAT)

    def handler(**kwargs: Any) -> Any:
        kwargs["messages"] = shown_to_the_model(list(kwargs.get("messages") or []))
        kwargs["llama"] = Bounded(kwargs["llama"], kwargs.get("max_tokens") or DEFAULT_LIMIT)
        return stock(**kwargs)

    registry: Any = formats.LlamaChatCompletionHandlerRegistry  # untyped in llama-cpp-python
    registry().register_chat_completion_handler(TOOLS_FORMAT, handler, overwrite=True)


def main(argv: list[str]) -> None:
    parent = int(argv[0])
    if os.getppid() != parent:  # the owner died before this process got going
        return
    threading.Thread(target=_watch, args=(parent,), daemon=True, name="owner-watch").start()
    module = argv[1]
    if importlib.util.find_spec("llama_cpp") is not None:
        register_tools_format()
    sys.argv = [module, *argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])

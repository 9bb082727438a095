"""``python -m agentnb.models.local_server.launch PARENT_PID MODULE ARGS...``: llama-cpp-python's
server (``MODULE`` is ``llama_cpp.server``), tied to the process that started it.

`agentnb.models.local_server.model.LocalModel` starts the server through this module rather than as
``python -m llama_cpp.server`` directly, for two reasons:

- a server whose owner died without stopping it (a kernel killed, a test runner interrupted
  hard) stops by itself: a thread checks every half second that the process ``PARENT_PID`` is
  still its parent, and ends this process when it is not;
- it registers agentnb's chat format (`.chat_format`, ``agentnb-function-calling``; the
  older name ``agentnb-chatml-function-calling`` is kept for it): the prompt as plain text in
  the model's own markup, tool results shown, every completion bounded and seeded.

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

from . import chat_format

OLD_FORMAT = "agentnb-chatml-function-calling"
"""The chat format's name before it spoke more than ChatML: still accepted."""


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)  # the owner is gone: nothing here is worth a clean shutdown


def register_formats() -> None:
    """Register agentnb's chat format with llama-cpp-python (in this process), by both names."""
    from llama_cpp import llama_chat_format as formats

    chat_format.register()
    registry: Any = formats.LlamaChatCompletionHandlerRegistry  # its handler type is narrower
    registry().register_chat_completion_handler(OLD_FORMAT, chat_format.handler, overwrite=True)


def main(argv: list[str]) -> None:
    parent = int(argv[0])
    if os.getppid() != parent:  # the owner died before this process got going
        return
    threading.Thread(target=_watch, args=(parent,), daemon=True, name="owner-watch").start()
    module = argv[1]
    if importlib.util.find_spec("llama_cpp") is not None:
        register_formats()
    sys.argv = [module, *argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])

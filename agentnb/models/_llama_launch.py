"""``python -m agentnb.models._llama_launch PARENT_PID MODULE ARGS...``: llama-cpp-python's
server (``MODULE`` is ``llama_cpp.server``), tied to the process that started it.

`agentnb.models.local.LocalModel` starts the server through this module rather than as
``python -m llama_cpp.server`` directly, so that a server whose owner died without stopping it
(a kernel killed, a test runner interrupted hard) stops by itself: a thread checks every half
second that the process ``PARENT_PID`` is still its parent, and ends this process when it is
not. ``MODULE`` runs as ``python -m MODULE ARGS...`` would run it (tests run a stand-in
server this way); ``ARGS`` are the server's own command-line options.
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
import time


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)  # the owner is gone: nothing here is worth a clean shutdown


def main(argv: list[str]) -> None:
    parent = int(argv[0])
    if os.getppid() != parent:  # the owner died before this process got going
        return
    threading.Thread(target=_watch, args=(parent,), daemon=True, name="owner-watch").start()
    module = argv[1]
    sys.argv = [module, *argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])

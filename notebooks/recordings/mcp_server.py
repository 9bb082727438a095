"""A small MCP server written with the mcp SDK's server API: notebook 15 starts it, and so do
the tests (tests/runtime/tools/test_mcp.py).

``python mcp_server.py`` speaks MCP on stdio with two tools (``add``, ``read_note``);
``--tools N`` adds N catalogue tools (``lookup_0`` ... ``lookup_{N-1}``), to measure what a
server's tool specs cost against their number. For the tests: ``--faults`` adds tools that
misbehave (``sleep``, ``crash``, ``has_env``, ``fail``), ``--hang`` never answers the
handshake (a server that hangs at start), and ``http PORT`` serves streamable HTTP on
127.0.0.1:PORT (``/mcp``) instead of stdio.
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")
NOTES = {"mcp": "MCP servers offer tools; every spec is resent with every model call."}


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def read_note(topic: str) -> str:
    """Read the note kept on a topic."""
    return NOTES.get(topic, f"no note on {topic!r}")


def sleep(seconds: float) -> str:
    """Sleep for some seconds, then answer."""
    time.sleep(seconds)
    return "slept"


def crash() -> str:
    """Exit the server process at once (a server that dies mid-call)."""
    os._exit(3)


def has_env(name: str) -> str:
    """Whether the server's environment has a variable, and its length."""
    value = os.environ.get(name)
    return "absent" if value is None else f"present, {len(value)} characters"


def fail(why: str) -> str:
    """Raise an error with the given text."""
    raise ValueError(why)


def _catalogue(n: int) -> None:
    for i in range(n):

        def lookup(query: str, limit: int = 10) -> str:
            return f"{query}:{limit}"

        server.tool(
            name=f"lookup_{i}", description=f"Look up records of kind {i} matching a query."
        )(lookup)


if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--hang" in argv:
        time.sleep(3600)
    if "--faults" in argv:
        for misbehaving in (sleep, crash, has_env, fail):
            server.tool()(misbehaving)
    if "--tools" in argv:
        _catalogue(int(argv[argv.index("--tools") + 1]))
    if "http" in argv:
        server.run("streamable-http", host="127.0.0.1", port=int(argv[argv.index("http") + 1]))
    else:
        server.run()

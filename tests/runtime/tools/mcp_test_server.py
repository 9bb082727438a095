"""An MCP server written with the SDK's own server API, started by tests/runtime/test_mcp.py.

``python mcp_test_server.py`` speaks MCP on stdio; ``python mcp_test_server.py http PORT``
serves streamable HTTP on 127.0.0.1:PORT (``/mcp``). ``--tools N`` adds N padding tools
(for the cost of a server's specs against its tool count); ``--hang`` never answers the
handshake (a server that hangs at start).
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("agentnb-test")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def sleep(seconds: float) -> str:
    """Sleep for some seconds, then answer."""
    time.sleep(seconds)
    return "slept"


@server.tool()
def crash() -> str:
    """Exit the server process at once (a server that dies mid-call)."""
    os._exit(3)


@server.tool()
def has_env(name: str) -> str:
    """Whether the server's environment has a variable, and its length."""
    value = os.environ.get(name)
    return "absent" if value is None else f"present, {len(value)} characters"


@server.tool()
def fail(why: str) -> str:
    """Raise an error with the given text."""
    raise ValueError(why)


def _padding(n: int) -> None:
    for i in range(n):

        def pad(query: str, limit: int = 10) -> str:
            return f"{query}:{limit}"

        server.tool(
            name=f"lookup_{i}", description=f"Look up records of kind {i} matching a query."
        )(pad)


if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--hang" in argv:
        time.sleep(3600)
    if "--tools" in argv:
        _padding(int(argv[argv.index("--tools") + 1]))
    if argv and argv[0] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(argv[1]))
    else:
        server.run()

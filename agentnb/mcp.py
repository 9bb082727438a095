"""``agentnb.mcp``: tools from MCP servers (``pip install -e ".[mcp]"``).

``Agent(..., mcp_servers=[agentnb.mcp.stdio("npx", ["-y", "@modelcontextprotocol/server-filesystem",
"/data"])])`` offers the server's tools to the agent; ``agentnb.mcp.http(url, headers=...)``
reaches a server over streamable HTTP. The code is `agentnb.runtime.tools.mcp`; the ``mcp``
SDK is imported only when a run first needs a server. See docs/mcp.md.
"""

from __future__ import annotations

from .runtime.tools.mcp import MCPTool, Server, http, result_text, stdio

__all__ = ["MCPTool", "Server", "http", "result_text", "stdio"]

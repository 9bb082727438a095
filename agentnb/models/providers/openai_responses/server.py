"""`ResponsesServer`: a small, stateful stand-in for OpenAI's Responses API, on 127.0.0.1.

It serves ``POST /v1/responses`` for any agentnb model client (a `ScriptedModel`, a
`FunctionModel`), so a program written against the Responses API (`OpenAIResponsesModel`,
or openai-agents, which uses this API by default) runs offline, over real HTTP, with the
server's side of the conversation state: each response is stored unless the request says
``store: false``, and a request naming a ``previous_response_id`` continues it (an unknown id
is a 400, as OpenAI answers). What it bills is the point of it: ``usage.input_tokens``
counts the *whole* context, stored part included, however little the request sent — one
token per four characters of the canonical request, a stand-in's figure, not a tokenizer's.

Beside text, function calls and JSON-schema output, it can add what only this API has: a
reasoning item (``reasoning=True``) and, when a request carries a hosted tool (web search,
file search, code interpreter), that tool's call item before the answer, as the real
server would run it. Streaming (``stream: true``) sends the API's server-sent events.

It is a test double: one thread, no authentication, nothing kept after `stop`. Every request
body is kept in `received`, so a test can check what was sent.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ...base import ModelClient
from ...canonical import canonical_request
from ...types import Message, ModelRequest, ModelResponse, OutputSchema, ToolCall, ToolSpec

__all__ = ["ResponsesServer"]

_HOSTED_ITEMS = {
    "web_search": "web_search_call",
    "web_search_preview": "web_search_call",
    "file_search": "file_search_call",
    "code_interpreter": "code_interpreter_call",
}


class ResponsesServer:
    """Serves ``model`` over the Responses API; use as a context manager (or `start`, `stop`).

    ``url`` is the base URL to give a client (``http://127.0.0.1:<port>/v1``).
    """

    def __init__(self, model: ModelClient, *, reasoning: bool = False) -> None:
        self.model = model
        self.reasoning = reasoning
        self.received: list[dict[str, Any]] = []
        """Every request body, decoded, in order of arrival."""
        self.stored: dict[str, list[dict[str, Any]]] = {}
        """Each stored response's whole conversation: its input items, then its output."""
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._count = 0

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("ResponsesServer: start it first (or use it in a with block)")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> ResponsesServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.split("?")[0].rstrip("/") != "/v1/responses":
                    self._json(404, _error(f"no route {self.path}"))
                    return
                body = json.loads(raw or b"{}")
                with server._lock:  # one at a time: a script answers in order
                    server.received.append(body)
                    status, reply = server._answer(body)
                if status == 200 and body.get("stream"):
                    self._stream(reply)
                else:
                    self._json(status, reply)

            def _json(self, status: int, data: dict[str, Any]) -> None:
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _stream(self, reply: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for event in stream_events(reply):
                    line = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
                    self.wfile.write(line.encode())
                self.wfile.flush()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ResponsesServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.url if self._httpd is not None else "stopped"
        return f"ResponsesServer({self.model!r}, {where}, {len(self.stored)} stored)"

    # -- one request

    def _answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        previous = body.get("previous_response_id")
        if previous is not None and previous not in self.stored:
            return 400, _error(f"Previous response with id '{previous}' not found.")
        kept = self.stored[previous] if previous is not None else []
        items = [*kept, *(body.get("input") or [])]
        request = _request(body, items)
        response = asyncio.run(self.model.request(request))
        self._count += 1
        rid = f"resp_{self._count:04d}"
        output = self._output(body, request, response, rid)
        billed = math.ceil(len(canonical_request(request)) / 4)
        made = sum(len(c.arguments) for c in response.tool_calls) + len(response.text or "")
        reply = {
            "id": rid,
            "object": "response",
            "status": "completed",
            "model": body.get("model"),
            "previous_response_id": previous,
            "output": output,
            "usage": {
                "input_tokens": billed,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": math.ceil(made / 4),
                "output_tokens_details": {"reasoning_tokens": 4 if self.reasoning else 0},
                "total_tokens": billed + math.ceil(made / 4),
            },
        }
        if body.get("store", True):
            self.stored[rid] = [*items, *output]
        return 200, reply

    def _output(
        self, body: dict[str, Any], request: ModelRequest, response: ModelResponse, rid: str
    ) -> list[dict[str, Any]]:
        output: list[dict[str, Any]] = []
        if self.reasoning:
            summary = [{"type": "summary_text", "text": "Thought about the request."}]
            output.append({"type": "reasoning", "id": f"rs_{rid}", "summary": summary})
        if not response.tool_calls:  # a hosted tool runs before the answer
            for tool in body.get("tools") or []:
                kind = _HOSTED_ITEMS.get(tool.get("type"))
                if kind is not None:
                    output.append(_hosted_item(kind, rid, request.last_user_text))
        if response.text is not None:
            part = {"type": "output_text", "text": response.text, "annotations": []}
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{rid}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [part],
                }
            )
        for i, call in enumerate(response.tool_calls):
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{rid}_{i}",
                    "call_id": call.id or f"call_{rid}_{i}",
                    "name": call.name,
                    "arguments": call.arguments,
                    "status": "completed",
                }
            )
        return output


def _hosted_item(kind: str, rid: str, query: str) -> dict[str, Any]:
    item: dict[str, Any] = {"type": kind, "id": f"{kind[:2]}_{rid}", "status": "completed"}
    if kind == "web_search_call":
        item["action"] = {"type": "search", "query": query[:100]}
    elif kind == "file_search_call":
        item["queries"] = [query[:100]]
    else:
        item.update(code="print(1 + 1)", outputs=[{"type": "logs", "logs": "2"}])
    return item


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text") or p.get("refusal") or "" for p in content or [])


def _tool_output(output: Any) -> str:
    """A ``function_call_output``'s output as the model reads it: text as it is; a list of
    content parts (what openai-agents sends for an MCP tool's result) as its texts, a part
    with no text (an image, a file) named by its type; anything else as JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        texts = []
        for part in output:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                texts.append(f"[{kind}]")
        return "\n".join(texts)
    return json.dumps(output, default=str)


def _request(body: dict[str, Any], items: list[dict[str, Any]]) -> ModelRequest:
    """The request the model is asked: the whole conversation as agentnb's messages."""
    messages: list[Message] = []
    for item in items:
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") in ("user", "assistant"):
            messages.append(Message(item["role"], _text(item.get("content"))))
        elif kind == "function_call":
            call = ToolCall(item["name"], item.get("arguments") or "{}", item["call_id"])
            last = messages[-1] if messages else None
            if last is not None and last.role == "assistant":  # its text, or the calls before it
                messages[-1] = Message.assistant(last.content, (*last.tool_calls, call))
            else:
                messages.append(Message.assistant(None, (call,)))
        elif kind == "function_call_output":
            output = _tool_output(item.get("output"))
            messages.append(Message("tool", output, tool_call_id=item["call_id"]))
        # reasoning and hosted-tool items stay in the stored conversation, unseen by the model
    tools = [
        ToolSpec(t["name"], t.get("description") or "", t.get("parameters") or {})
        for t in body.get("tools") or []
        if t.get("type") == "function"
    ]
    fmt = (body.get("text") or {}).get("format") or {}
    schema = OutputSchema(fmt["name"], fmt["schema"]) if fmt.get("type") == "json_schema" else None
    return ModelRequest(body.get("instructions") or "", messages, tools, schema, "responses-server")


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": None}}


def stream_events(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """A response as the API streams it: items added, their deltas, items done, the end."""
    started = {**reply, "status": "in_progress", "output": []}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": started}]
    for index, item in enumerate(reply["output"]):
        added, delta, text = item, "", ""
        if item["type"] == "message":
            added = {**item, "content": []}
            delta, text = "response.output_text.delta", item["content"][0]["text"]
        elif item["type"] == "function_call":
            added = {**item, "arguments": ""}
            delta, text = "response.function_call_arguments.delta", item["arguments"]
        events.append({"type": "response.output_item.added", "output_index": index, "item": added})
        for start in range(0, len(text), 8):
            piece = text[start : start + 8]
            events.append(
                {"type": delta, "item_id": item["id"], "output_index": index, "delta": piece}
            )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": reply})
    return events

"""agentnb's chat format for llama-cpp-python's server: the prompt a model reads, written as
plain text in the model's own turn markup, with tool calling.

It runs inside the server process (`.launch` registers it as `FORMAT`), and follows
llama-cpp-python's ``chatml-function-calling`` in what it asks of the model: the tools are
described in the system turn, the model answers ``message:`` then text, or
``functions.NAME:`` then JSON arguments, each step constrained by a grammar (the arguments by
the tool's JSON schema). What it does differently, each a fault of the stock format:

- **no HTML escaping**: the stock format renders its template with autoescaping, so the model
  read ``&#34;`` for every quote of a JSON argument or tool result, and was billed for it; here
  the prompt is concatenated text, so what the trace shows is what the model reads;
- **the model's own markup**: ChatML (``<|im_start|>``, SmolLM2, Qwen) or Gemma's turns
  (``<start_of_turn>``, no system role: the system text opens the first user turn), found
  from the model file's chat template or, without one, from its vocabulary (`detect`); a model
  in neither is refused with a message saying which ``chat_format`` to pass instead;
- **tool results shown**: each ``tool`` message becomes a user turn naming the function it
  came from (the stock template leaves them out, so a coordinator never read its sub-agents);
- **bounded and seeded**: every completion is bounded by the request's ``max_tokens`` (or
  `DEFAULT_LIMIT`; the stock format asks for none on its tool-choice steps, and a small model
  writing whitespace into a JSON grammar runs until the context is full), and the request's
  ``seed`` reaches every completion's sampler (the stock format drops it), on a prompt
  evaluated from scratch, so that a seeded request repeats exactly.

Set ``AGENTNB_LOG_PROMPTS=1`` in the server's environment to have each prompt written to its
output as one ``agentnb-prompt {json}`` line: what the server tokenized, for tests and audits.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any

FORMAT = "agentnb-function-calling"
"""The chat format's name in llama-cpp-python's registry."""

DEFAULT_LIMIT = 512
"""Tokens one completion may generate when the request sets no ``max_tokens``."""

PROMPT_LOG = "agentnb-prompt "
"""How a logged prompt's line starts (``AGENTNB_LOG_PROMPTS=1``)."""

SAMPLING = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "typical_p",
    "presence_penalty",
    "frequency_penalty",
    "repeat_penalty",
    "tfs_z",
    "mirostat_mode",
    "mirostat_tau",
    "mirostat_eta",
    "logits_processor",
    "seed",
    "model",
)
"""What a request's sampling settings pass on to every completion it makes."""


@dataclass(frozen=True)
class Turns:
    """How one family of models writes a conversation."""

    family: str
    opening: str
    """A turn's start, with ``{role}``."""
    closing: str
    stop: str
    """Where the model's turn ends (the closing without its newline)."""
    assistant: str
    """The assistant's role name in this markup."""
    system: bool
    """Whether the markup has a system role (else the system text opens the first user turn)."""

    def turn(self, role: str, text: str) -> str:
        return self.opening.format(role=role) + text + self.closing

    def answer(self) -> str:
        """The start of the model's own turn (the generation prompt)."""
        return self.opening.format(role=self.assistant)


CHATML = Turns("chatml", "<|im_start|>{role}\n", "<|im_end|>\n", "<|im_end|>", "assistant", True)
GEMMA = Turns(
    "gemma", "<start_of_turn>{role}\n", "<end_of_turn>\n", "<end_of_turn>", "model", False
)
FAMILIES = (CHATML, GEMMA)


def detect(metadata: dict[str, str], is_special: Any) -> Turns:
    """The markup of a model: the family whose end-of-turn marker its chat template holds,
    else the family whose marker its vocabulary holds as one special token
    (``is_special(text) -> bool``); a `ValueError` naming what to do for any other model."""
    template = metadata.get("tokenizer.chat_template") or ""
    for turns in FAMILIES:
        if turns.stop in template:
            return turns
    for turns in FAMILIES:
        if is_special(turns.stop):
            return turns
    raise ValueError(
        f"the chat format {FORMAT} writes ChatML or Gemma turns, and this model uses neither "
        f"({metadata.get('general.architecture', 'unknown architecture')}); start it with "
        "local_model(chat_format=...) naming one of llama-cpp-python's chat formats"
    )


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts: the text ones
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _tool_instructions(tools: list[dict[str, Any]]) -> str:
    described = "".join(
        f"\nfunctions.{t['function']['name']}:\n"
        f"{json.dumps(t['function'].get('parameters') or {}, ensure_ascii=False)}\n"
        for t in tools
    )
    return (
        "\n\nYou have access to the following functions:\n"
        f"{described}"
        "\n\nYou can respond to users messages with either a single message or one or more "
        "function calls."
        "\n\nTo respond with a message begin the message with 'message:', use the following "
        "format:\n\nmessage:\n<message>"
        "\n\nTo respond with one or more function calls begin the message with "
        "'functions.<function_name>:', use the following format:"
        '\n\nfunctions.<function_name>:\n{ "arg1": "value1", "arg2": "value2" }'
        '\nfunctions.<function_name>:\n{ "arg1": "value1", "arg2": "value2" }'
    )


def render(turns: Turns, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """The prompt for ``messages``, ending with the start of the model's turn."""
    names = {
        call.get("id"): call.get("function", {}).get("name", "a function")
        for message in messages
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or []
    }
    system = "\n\n".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
    if tools:
        system += _tool_instructions(tools)
    parts = []
    waiting = ""  # a system text for a markup without a system role: the first user turn's
    if system and turns.system:
        parts.append(turns.turn("system", system))
    elif system:
        waiting = system
    for message in messages:
        role, text = message.get("role"), _text(message.get("content"))
        if role == "system":
            continue
        if role == "tool":
            name = names.get(message.get("tool_call_id"), "a function")
            role, text = "user", f"Result of functions.{name}:\n{text}"
        if role == "assistant":
            calls = [
                f"functions.{c['function']['name']}:\n{c['function'].get('arguments') or ''}"
                for c in message.get("tool_calls") or []
            ]
            said = ("message:\n" + text if tools else text) if text else ""
            parts.append(turns.turn(turns.assistant, "\n".join(filter(None, [said, *calls]))))
            continue
        if waiting:
            text, waiting = f"{waiting}\n\n{text}", ""
        parts.append(turns.turn("user", text))
    if waiting:
        parts.append(turns.turn("user", waiting))
    return "".join(parts) + turns.answer()


class Completions:
    """The completions of one chat request: the same sampling, bound and seed for each."""

    def __init__(self, llama: Any, limit: int, sampling: dict[str, Any]) -> None:
        self.llama, self.limit, self.sampling = llama, limit, sampling

    def __call__(
        self, prompt: str, stop: list[str], grammar: Any = None, stream: bool = False, **over: Any
    ) -> Any:
        if os.environ.get("AGENTNB_LOG_PROMPTS") == "1":
            print(PROMPT_LOG + json.dumps({"prompt": prompt}), file=sys.stderr, flush=True)
        options = {**self.sampling, **over}
        if options.get("seed") is not None:
            # evaluated from scratch: reusing the cached prefix of an earlier prompt changes
            # the logits in their last digits, enough to change a sampled token
            self.llama.reset()
        return self.llama.create_completion(
            prompt=prompt,
            stop=stop,
            grammar=grammar,
            stream=stream,
            max_tokens=self.limit,
            **options,
        )


def handler(
    llama: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    tool_choice: Any = None,
    stream: bool = False,
    stop: str | list[str] | None = None,
    max_tokens: int | None = None,
    response_format: dict[str, Any] | None = None,
    grammar: Any = None,
    **settings: Any,
) -> Any:
    """llama-cpp-python's chat completion handler for `FORMAT` (see the module docstring)."""
    from llama_cpp import llama_chat_format, llama_grammar

    chat: Any = llama_chat_format  # untyped helpers: their TypedDicts are llama-cpp-python's
    turns = _turns_of(llama)
    sampling = {k: v for k, v in settings.items() if k in SAMPLING and v is not None}
    complete = Completions(llama, max_tokens or DEFAULT_LIMIT, sampling)
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    stops.append(turns.stop)
    tools = list(tools or [])

    def from_grammar(text: str) -> Any:
        return llama_grammar.LlamaGrammar.from_string(text, verbose=llama.verbose)

    def arguments_grammar(tool: dict[str, Any]) -> Any:
        schema = json.dumps(tool["function"].get("parameters") or {})
        try:
            return llama_grammar.LlamaGrammar.from_json_schema(schema, verbose=llama.verbose)
        except Exception:  # a schema the converter cannot read: any JSON
            return from_grammar(llama_grammar.JSON_GBNF)

    if not tools or tool_choice in (None, "none"):
        prompt = render(turns, messages, [])
        if response_format is not None and response_format.get("type") == "json_object":
            grammar = chat._grammar_for_response_format(response_format)
        return chat._convert_completion_to_chat(
            complete(prompt, stops, grammar, stream), stream=stream
        )

    by_name = {t["function"]["name"]: t for t in tools}
    prompt = render(turns, messages, tools)
    if isinstance(tool_choice, dict):  # one tool, forced
        name = tool_choice["function"]["name"]
        if name not in by_name:
            raise ValueError(f"Tool with name '{name}' not found in tools")
        prompt += f"functions.{name}:\n"
        chunks = complete(prompt, stops, arguments_grammar(by_name[name]), stream)
        return chat._convert_completion_to_chat_function(name, chunks, stream)

    names = " | ".join(f'"functions.{name}:"' for name in by_name)
    decide = from_grammar(f'root ::= functions | "message:"\nfunctions ::= {names}\n')
    first = complete(prompt, [":"], decide, temperature=0)  # greedy, as the stock format
    chosen = first["choices"][0]["text"]
    if "message" in chosen:
        follow = from_grammar(f'root ::= functions | "{turns.stop}"\nfunctions ::= {names}\n')
        return chat._convert_completion_to_chat(
            complete(prompt + "message:\n", [turns.stop], follow, stream), stream=stream
        )
    if stream:
        raise ValueError("a streamed request whose model chose a tool: send it unstreamed")
    calls: list[tuple[str, Any]] = []
    name = chosen[len("functions.") :]
    follow = from_grammar(f'root ::= functions | "{turns.stop}"\nfunctions ::= {names}\n')
    while name in by_name and len(calls) < 16:
        prompt += f"functions.{name}:\n"
        done = complete(prompt, stops, arguments_grammar(by_name[name]))
        calls.append((name, done))
        prompt += done["choices"][0]["text"] + "\n"
        nxt = complete(prompt, stops, follow)
        name = nxt["choices"][0]["text"][len("functions.") :]
    return _tool_calls_response(first, calls)


def _tool_calls_response(first: dict[str, Any], calls: list[tuple[str, Any]]) -> dict[str, Any]:
    usage = {
        key: sum(done.get("usage", {}).get(key, 0) for _, done in calls)
        for key in ("prompt_tokens", "completion_tokens", "total_tokens")
    }
    return {
        "id": "chat" + first["id"],
        "object": "chat.completion",
        "created": first["created"],
        "model": first["model"],
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "logprobs": None,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call__{i}_{name}_{done['id']}",
                            "type": "function",
                            "function": {"name": name, "arguments": done["choices"][0]["text"]},
                        }
                        for i, (name, done) in enumerate(calls)
                    ],
                },
            }
        ],
        "usage": usage,
    }


_DETECTED: dict[int, Turns] = {}


def _turns_of(llama: Any) -> Turns:
    """The markup of the model ``llama`` serves, found once per model."""
    found = _DETECTED.get(id(llama))
    if found is None:

        def is_special(text: str) -> bool:
            return len(llama.tokenize(text.encode(), add_bos=False, special=True)) == 1

        found = _DETECTED[id(llama)] = detect(dict(llama.metadata or {}), is_special)
    return found


def register() -> None:
    """Register `FORMAT` with llama-cpp-python (in this process)."""
    from llama_cpp import llama_chat_format as formats

    registry: Any = formats.LlamaChatCompletionHandlerRegistry  # untyped in llama-cpp-python
    registry().register_chat_completion_handler(FORMAT, handler, overwrite=True)

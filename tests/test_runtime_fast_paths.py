"""The run loop's fast paths must agree with the plain definitions they stand for.

Each is written out by hand because it runs on every model call or every sub-agent call
(see benchmarks/overhead.py); each test here compares it with the slower, obvious form.
"""

from __future__ import annotations

import itertools
import json
import random

from agentnb import Agent, ScriptedModel
from agentnb.models.types import Usage
from agentnb.runtime.agent_tool import SubAgentInput
from agentnb.runtime.tools import function_tool, result_text, to_text, truncate


def test_adding_a_usage_in_place_is_the_plain_sum():
    tokens = (None, 0, 7)
    for a, b, c, d in itertools.product(tokens, repeat=4):
        total, provider = Usage(a, b, 3), Usage(c, d, 5)
        expected = total + Usage(c, d, 1)
        total.add(provider, requests=1)
        assert total == expected
        assert provider == Usage(c, d, 5)  # the added one is left as it was


JSONISH = ['"', "\\", ",", "}", "]", "[", " ", "\n", "\t", "NaN", "\\ud800", "\ufeff", "0", "x", ""]


def _arguments(rnd: random.Random) -> str:
    values = ["x", "", "a\u00e9\U0001f600", 3, None, True, ["h"], [], {"k": "v"}, 1.5]
    raw: dict[str, object] = {}
    if rnd.random() < 0.9:
        raw["input"] = rnd.choice(values)
    if rnd.random() < 0.5:
        raw["artifacts"] = rnd.choice([[], ["input"], ["a", "a"], ["a", 2], "input", None])
    if rnd.random() < 0.3:
        raw[rnd.choice(["extra", "input"])] = rnd.choice(values)
    text = json.dumps(raw, ensure_ascii=rnd.random() < 0.5)
    for _ in range(rnd.choice([0, 0, 1, 2])):  # damage it: the error paths must agree too
        at = rnd.randint(0, len(text))
        text = text[:at] + rnd.choice(JSONISH) + text[at + rnd.randint(0, 1) :]
    return text


def test_default_sub_agent_arguments_parse_as_on_the_plain_path():
    agent = Agent("helper", "Help.", ScriptedModel([]))
    tool = agent.as_tool()
    rnd = random.Random(5)
    special = ['{"input":"x"} junk', '{"input":"a\\ud800b"}', '\ufeff{"input":"x"}', "", "  ",
               '{"input":"x","n":NaN}', '{"input":"x","input":"y"}', '["x"]', "null"]  # fmt: skip
    for arguments in special + [_arguments(rnd) for _ in range(3000)]:
        got, want = tool._parse(arguments), tool._parse_plain(arguments)
        if isinstance(want, str):
            assert got == want, arguments
        else:
            assert type(got) is SubAgentInput and got == want, arguments


def plain_params(text: str, count: int = 1, flag: bool = False) -> str:
    """A tool whose parameters are all of the types the JSON fast path takes."""
    return f"{text}{count}{flag}"


NUMBERS = ["1", "1.0", "1.5", "-0", "1e2", "1E400", "1" * 400, "NaN", "Infinity", "true", "null",
           '"1"', '" 1 "', '"true"', '"yes"', '"0x10"', '"1_000"', "[]", "{}", '"\\u00e9"', '""']  # fmt: skip


def _tool_arguments(rnd: random.Random) -> str:
    fields = {"text": rnd.choice(['"a"', '"\\u00e9\\n"', '""', *NUMBERS])}
    for name in ("count", "flag", "other"):
        if rnd.random() < (0.1 if name == "other" else 0.7):
            fields[name] = rnd.choice(NUMBERS)
    text = "{" + ",".join(f'"{k}":{v}' for k, v in fields.items()) + "}"
    for _ in range(rnd.choice([0, 0, 1])):
        at = rnd.randint(0, len(text))
        text = text[:at] + rnd.choice(JSONISH) + text[at + rnd.randint(0, 1) :]
    return text


def test_function_tool_arguments_from_json_match_the_plain_path():
    tool = function_tool(plain_params)
    assert tool._json_args is tool.args_model
    rnd = random.Random(9)
    taken = 0
    for arguments in [_tool_arguments(rnd) for _ in range(4000)]:
        fast = tool._from_json(arguments)
        if fast is None:
            continue  # the plain path words the error
        taken += 1
        plain = tool._parse(arguments)
        assert fast == plain, arguments
        assert [type(v) for v in fast.values()] == [type(v) for v in plain.values()], arguments
    assert taken > 300  # the fast path was exercised


def test_only_plain_parameter_types_take_the_json_fast_path():
    def scored(text: str, score: float) -> str:
        """Float: a 400-digit number is inf from JSON text but an error from json.loads."""
        return text

    def listed(items: list[str]) -> str:
        """A list."""
        return ""

    assert function_tool(scored)._json_args is None
    assert function_tool(listed)._json_args is None
    assert function_tool(plain_params)._json_args is not None


async def test_a_tool_notices_its_function_was_replaced():
    tool = function_tool(plain_params)
    assert await tool.call({"text": "a"}) == "a1False"  # sync: run in a thread

    async def shout(text: str, count: int = 1, flag: bool = False) -> str:
        return text.upper()

    tool.fn = shout
    assert await tool.call({"text": "a"}) == "A"


def test_result_text_is_truncate_of_to_text():
    values = ["", "short", "x" * 30, "é" * 25, 42, None, {"a": [1, "é"]}, ["x"] * 9, 3.5]
    for value in values:
        for limit in (None, 0, 1, 20, 25, 1000):
            assert result_text(value, limit) == truncate(to_text(value), limit)

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
from agentnb.runtime.runner import add_call


def test_adding_a_call_to_a_usage_is_the_plain_sum():
    tokens = (None, 0, 7)
    for a, b, c, d in itertools.product(tokens, repeat=4):
        total, provider = Usage(a, b, 3), Usage(c, d, 5)
        assert add_call(total, provider) == total + Usage(c, d, 1)


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

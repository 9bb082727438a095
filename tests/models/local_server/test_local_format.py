"""agentnb's chat format for llama-cpp-python (`agentnb.models.local_server.chat_format`), without a
server: the prompt it writes for each model family, and how it finds a model's family.
The real server's side (what it tokenized and billed) is in test_local_model.py."""

from __future__ import annotations

import json

import pytest

from agentnb.models.local_server.chat_format import CHATML, GEMMA, detect, render

CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "glossary", "arguments": '{"term": "SLA"}'},
}
TOOL = {"type": "function", "function": {"name": "glossary", "parameters": {"type": "object"}}}
CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": 'Say "yes" & <no>.'},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": 'SLA: "a service level"'},
]


def test_chatml_is_the_messages_text_in_its_turns_unescaped():
    prompt = render(CHATML, CONVERSATION[:2], [])

    assert prompt == (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        '<|im_start|>user\nSay "yes" & <no>.<|im_end|>\n'
        "<|im_start|>assistant\n"
    )


def test_a_tool_call_and_its_result_are_in_the_prompt_as_sent():
    prompt = render(CHATML, CONVERSATION, [TOOL])

    assert '<|im_start|>assistant\nfunctions.glossary:\n{"term": "SLA"}<|im_end|>\n' in prompt
    assert (
        '<|im_start|>user\nResult of functions.glossary:\nSLA: "a service level"<|im_end|>\n'
        in prompt
    )
    assert "functions.glossary:\n" + json.dumps({"type": "object"}) in prompt  # the tool's schema
    assert "&#34;" not in prompt and "&quot;" not in prompt and "\\u0027" not in prompt


def test_gemma_has_no_system_turn_the_system_text_opens_the_first_user_turn():
    prompt = render(GEMMA, CONVERSATION[:2], [])

    assert prompt == (
        '<start_of_turn>user\nBe brief.\n\nSay "yes" & <no>.<end_of_turn>\n<start_of_turn>model\n'
    )
    assert "system" not in prompt and "<|im_start|>" not in prompt


def test_gemma_writes_the_assistant_as_model():
    prompt = render(GEMMA, CONVERSATION, [TOOL])

    assert '<start_of_turn>model\nfunctions.glossary:\n{"term": "SLA"}<end_of_turn>\n' in prompt
    assert prompt.endswith("<start_of_turn>model\n")


def test_an_earlier_answer_with_tools_offered_is_marked_as_a_message():
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello."}]

    assert "<|im_start|>assistant\nmessage:\nHello.<|im_end|>" in render(CHATML, messages, [TOOL])
    assert "<|im_start|>assistant\nHello.<|im_end|>" in render(CHATML, messages, [])


def test_the_family_comes_from_the_template_then_from_the_vocabulary():
    never = lambda text: False  # noqa: E731
    assert (
        detect({"tokenizer.chat_template": "{{'<|im_start|>' + role}}<|im_end|>"}, never) is CHATML
    )
    assert detect({}, lambda text: text == "<end_of_turn>") is GEMMA
    with pytest.raises(ValueError, match=r"neither \(llama\).*chat_format"):
        detect({"general.architecture": "llama"}, never)

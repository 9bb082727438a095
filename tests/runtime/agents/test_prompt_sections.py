"""Prompt sections: assembled once, shared across agents, and attributed in the trace."""

from __future__ import annotations

import pytest

import agentnb as a
from agentnb.measure.sections import section_costs
from agentnb.runtime.agents.prompt import section_sizes
from agentnb.trace.sizes import request_sizes

OUTPUT = a.PromptSection(
    "Output format", 'Answer in JSON: {"verdict": "..."}.\nBe brief — "quoted".'
)
RULES = a.PromptSection("Constraints", "Do not invent facts.\tCite the clause.")


def hierarchy() -> tuple[a.Agent, a.ScriptedModel, a.ScriptedModel]:
    legal_model = a.ScriptedModel([a.say("fine"), a.say("fine again")])
    legal = a.Agent(
        "legal",
        [
            a.PromptSection("Role", "You review contracts."),
            OUTPUT,
            RULES,
            a.PromptSection("Debug", "never sent", condition=False),
        ],
        legal_model,
    )
    boss_model = a.ScriptedModel(
        [
            a.tool_call("legal", input="check 1"),
            a.tool_call("legal", input="check 2"),
            a.say("done"),
        ]
    )
    boss = a.Agent(
        "boss", [a.PromptSection("Role", "You coordinate."), OUTPUT], boss_model, [legal]
    )
    return boss, boss_model, legal_model


def test_sections_are_assembled_with_conditions_and_shared_text():
    boss, boss_model, legal_model = hierarchy()
    result = a.run_sync(boss, "go")

    assert result.ok
    legal_system = legal_model.requests[0].system
    assert legal_system.startswith("## Role\nYou review contracts.\n\n## Output format\n")
    assert "never sent" not in legal_system
    assert OUTPUT.render() in boss_model.requests[0].system
    assert boss_model.requests[0].system == a.assemble_prompt(boss.instructions)


def test_section_sizes_add_up_to_the_system_characters_of_each_request():
    boss, boss_model, legal_model = hierarchy()
    a.run_sync(boss, "go")

    for agent, model in ((boss, boss_model), (boss.tools[0], legal_model)):
        sizes = section_sizes(agent.instructions)
        for request in model.requests:
            assert sum(chars for _, chars in sizes) == request_sizes(request)["system"]
    # escaping counts: each of the two newlines and six quotes in OUTPUT is two characters
    assert dict(section_sizes([OUTPUT]))["Output format"] == len(OUTPUT.render()) + 8


def test_section_costs_per_agent_are_exact_and_in_prompt_order():
    boss, _, _ = hierarchy()
    result = a.run_sync(boss, "go")
    table = section_costs(result)

    assert table["total_chars"].sum() == result.calls["chars_in_system"].sum()
    legal = table[table["path"] == "boss/legal"]
    assert list(legal["section"]) == ["Role", "Output format", "Constraints", "(separators)"]
    assert set(legal["calls"]) == {2}  # legal was called twice, one model call each
    boss_rows = table[table["path"] == "boss"].set_index("section")
    assert boss_rows.loc["Output format", "calls"] == 3
    assert boss_rows.loc["(separators)", "chars_per_call"] == 4  # one "\n\n", escaped
    for path, rows in table.groupby("path"):
        per_call = result.calls[result.calls["path"] == path]["chars_in_system"]
        assert set(per_call) == {rows["chars_per_call"].sum()}


def test_section_costs_across_the_hierarchy_show_what_a_shared_section_costs():
    boss, _, _ = hierarchy()
    result = a.run_sync(boss, "go")
    shared = section_costs(result, by="section").set_index("section")

    size = dict(section_sizes([OUTPUT]))["Output format"]
    assert shared.loc["Output format", "agents"] == "boss, legal"
    assert shared.loc["Output format", "calls"] == 5
    assert shared.loc["Output format", "total_chars"] == 5 * size
    assert shared["share"].sum() == pytest.approx(1.0)
    assert shared["total_chars"].is_monotonic_decreasing


def test_plain_string_instructions_are_one_row():
    model = a.ScriptedModel([a.say("hi")])
    result = a.run_sync(a.Agent("solo", "Be nice.\nReally.", model), "x")
    table = section_costs(result)

    assert list(table["section"]) == ["(instructions)"]
    assert table["total_chars"].iloc[0] == len("Be nice.\\nReally.")


def test_strings_mixed_with_sections_are_labelled_by_their_first_line():
    sizes = dict(section_sizes(["You are terse.\nVery.", a.PromptSection("", "no heading")]))
    assert sizes == {
        "You are terse.": len("You are terse.\\nVery."),
        "no heading": 10,
        "(separators)": 4,
    }


def test_a_wrong_item_in_instructions_is_a_user_error():
    with pytest.raises(a.UserError, match="PromptSection or str"):
        a.assemble_prompt([a.PromptSection("x", "y"), 42])  # type: ignore[list-item]

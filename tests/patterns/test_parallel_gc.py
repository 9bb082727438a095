"""parallel() keeps the cyclic collector off its live branches (`gc.freeze`) and gives every
object back to it when the fan-out ends; it leaves a process that froze objects itself alone."""

from __future__ import annotations

import gc
import weakref

import pytest

import agentnb as a


class Cycle:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def branches(n: int, seen: list[int], cycles: list[weakref.ref[Cycle]]) -> dict[str, a.Agent]:
    @a.tool
    def probe(x: int) -> int:
        """Note how many objects are frozen, and leave a cycle behind."""
        seen.append(gc.get_freeze_count())
        cycles.append(weakref.ref(Cycle()))
        return x

    def agent(i: int) -> a.Agent:
        model = a.ScriptedModel([a.tool_call("probe", x=i), a.say(f"answer {i}")])
        return a.Agent(f"b{i}", "Call probe, then answer.", model, tools=[probe])

    return {f"b{i}": agent(i) for i in range(n)}


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


async def test_a_fan_out_freezes_what_its_branches_hold_and_unfreezes_it_at_the_end(unfrozen):
    seen: list[int] = []
    cycles: list[weakref.ref[Cycle]] = []
    fan = await a.parallel(branches(20, seen, cycles), "go")
    assert fan.ok and fan.outputs == {f"b{i}": f"answer {i}" for i in range(20)}
    assert len(seen) == 20 and all(n > 0 for n in seen)  # frozen while the branches ran
    assert gc.get_freeze_count() == 0  # everything given back
    gc.collect()
    assert [ref() for ref in cycles] == [None] * 20  # the cycles made during it are freed


async def test_a_process_that_froze_objects_itself_is_left_alone(unfrozen):
    gc.freeze()
    frozen = gc.get_freeze_count()
    seen: list[int] = []
    cycles: list[weakref.ref[Cycle]] = []
    fan = await a.parallel(branches(5, seen, cycles), "go")
    assert fan.ok
    # nothing more frozen by the fan-out (some of the process's frozen objects may be freed)
    assert len(seen) == 5 and all(n <= frozen for n in seen)
    assert 0 < gc.get_freeze_count() <= frozen  # and the process's own stay frozen
    gc.collect()
    assert [ref() for ref in cycles] == [None] * 5


async def test_nested_fan_outs_unfreeze_once_the_outermost_ends(unfrozen):
    seen: list[int] = []
    cycles: list[weakref.ref[Cycle]] = []
    inner = branches(3, seen, cycles)

    async def nested(x: int) -> str:
        """Run an inner fan-out."""
        fan = await a.parallel(inner, "go")
        seen.append(-gc.get_freeze_count())  # still frozen after the inner one ended
        return ",".join(fan.outputs.values())

    model = a.ScriptedModel([a.tool_call("nested", x=1), a.say("done")])
    outer = {"o": a.Agent("o", "Call nested.", model, tools=[a.tool(nested)])}
    fan = await a.parallel(outer, "go")
    assert fan.ok and fan["o"].output == "done"
    assert seen[-1] < 0
    assert gc.get_freeze_count() == 0

"""Counting the tokens of many call rows at once: each agent's rows in one pass.

Reading ``result.calls`` counts the tokens of every call (`CallRow.count_tokens`). Counted one
by one, each row works out again what the agent's previous call had already settled (its
tokenizer, its prompt and tool specs, how much of its history is counted), and over a run of
100,000 calls that came to more than the counting itself (issue 34). Here the rows of one agent
are counted in the order it made them: a row whose request is the previous request's history
grown by appending, with the same prompt, specs and model, is counted by adding the messages it
appended to the previous row's totals and chain of fingerprints; any other row is counted the
plain way, by `CallRow.count_tokens`. ``tests/trace/test_row_counts.py`` checks that both ways
give the same rows, spans and tallies on random runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..models.local_server.tokenizer import TokenizerUnavailable
from .calls import CallRow, _Unsent
from .history import HistoryTally
from .tokens import Encoder, _answer_tokens, add_messages, tokenizer


def count_rows(rows: Iterable[CallRow]) -> None:
    """Count the tokens of the rows not counted yet, as `CallRow.count_tokens` would in the
    order of ``rows`` (the order the calls finished)."""
    agents: dict[int, tuple[HistoryTally, list[CallRow]]] = {}
    for row in rows:
        pending = row.pending
        if pending is None:
            continue
        if not isinstance(pending, _Unsent) or pending.tally is None:
            row.count_tokens()  # nothing shared with another row, or a row of its own kind
        else:  # the rows of one agent's run, in the order it made them
            agents.setdefault(id(pending.tally), (pending.tally, []))[1].append(row)
    for tally, agent_rows in agents.values():
        _count_agent(tally, agent_rows)


def _count_agent(tally: HistoryTally, rows: list[CallRow]) -> None:
    before: _Unsent | None = None  # the previous row's request, while the tally holds its count
    encoder: tuple[Encoder | None, str] | None = None  # its tokenizer, looked up when needed
    for row in rows:
        pending = row.pending
        assert pending is not None
        if before is not None and _follows(pending, before):
            try:
                encoder = encoder or tokenizer(pending.model)
                _count_next(row, pending, before, tally, encoder)
            except Exception:  # a counter that fails: the plain way says how
                pass
            else:
                before = pending
                continue
        row.count_tokens()
        # counted by a tokenizer (the tally holds the chain): the next row may go on from it
        before, encoder = (pending if tally.prefix is not None else None), None


def _follows(pending: _Unsent, before: _Unsent) -> bool:
    """Whether ``pending``'s request is ``before``'s grown by appending, with the same prompt,
    specs, output schema and model (what the plain count checks on its tally)."""
    return (
        pending.sent is before.sent
        and 0 < before.length <= pending.length
        and pending.system is before.system
        and pending.tools is before.tools
        and pending.output_schema is before.output_schema
        and pending.model is before.model
    )


def _count_next(
    row: CallRow,
    pending: _Unsent,
    before: _Unsent,
    tally: HistoryTally,
    encoder: tuple[Encoder | None, str],
) -> None:
    """Count ``row`` from where ``before``'s count left the tally, as `tokens.call_tokens`
    would: the same totals and chain, the tally left as it leaves it."""
    count, method = encoder
    if count is None:  # a server's tokenizer that failed since: the plain way says how
        raise TokenizerUnavailable(method)
    sums, fixed = tally.tokens, tally.prefix_fixed
    assert fixed is not None  # (..., root, the system prompt's tokens, the specs' tokens)
    messages, length = pending.sent.messages, pending.length
    history, chain = add_messages(
        messages, before.length, length, sums.values["tokens"], tally.prefix, count, method
    )
    answer = pending.answer
    tokens_out = _answer_tokens(answer[0], answer[1], count, method) if answer is not None else None
    sums.values = {"tokens": history}
    sums.count, sums.last = length, messages[length - 1]
    tally.prefix = chain
    row.pending = None
    row.fill_tokens(pending, fixed[5] + fixed[6] + history, tokens_out, method, chain)

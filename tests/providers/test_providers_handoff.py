"""Cross-provider handoff: turns 1-2 on one protocol, turn 3 on another, every ordered pair.

The canonical history (tool calls, results, reasoning with another protocol's
provider_meta) must re-encode into a request the target protocol accepts (checked by the
target kit's ``check_request``) and the conversation must go on.
"""

from __future__ import annotations

import itertools

import pytest
from contract import PLAIN, THINKING, USER, Run, collect, done, load_kits, request
from fakeserver import FakeServer

from loopwright.core.messages import Message, ToolResultPart

KITS = load_kits()
PAIRS = [(a, b) for a, b in itertools.permutations(KITS, 2)]


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=[f"{a.name}->{b.name}" for a, b in PAIRS])
async def test_handoff(first, second):
    with FakeServer() as s1, FakeServer() as s2:
        run1, run2 = Run(first, s1), Run(second, s2)
        s1.push(first.reply(THINKING), first.reply(PLAIN))
        m1 = run1.model()
        turn1 = done(await collect(m1, request([USER], reasoning="high")))
        results = Message.tool_results(
            [ToolResultPart(c.id, c.name, "18C, sunny") for c in turn1.message.tool_calls]
        )
        history = [USER, turn1.message, results]
        turn2 = done(await collect(m1, request(history, reasoning="high")))
        history += [turn2.message, Message.user("And in Fahrenheit?")]

        s2.push(second.reply(PLAIN))
        turn3 = done(await collect(run2.model(), request(history)))
        assert turn3.message.text == PLAIN.text
        body = s2.requests[0].json
        second.check_request(body)
        wire = str(body)
        # Another protocol's opaque reasoning data never crosses over.
        for foreign in ("gAAAAB-opaque-1", "rs_1", "sig-", *getattr(first, "opaque_markers", ())):
            if first.name != second.name:
                assert foreign not in wire, f"{foreign!r} leaked into {second.name}"

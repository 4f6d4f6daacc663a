"""Property: whatever garbage a model produces, the loop returns a RunResult, never
raises, and the history stays well-formed (every tool call has exactly one result in the
following tool message)."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loop_helpers import FakeSleep, add, echo, well_formed

from loopwright import Agent, FunctionModel, Limits, RunResult
from loopwright.core.errors import (
    AuthError,
    BadRequest,
    ContextOverflow,
    MalformedResponse,
    ProviderError,
    RateLimited,
    TransientProviderError,
)
from loopwright.core.messages import (
    Message,
    ReasoningPart,
    StopReason,
    TextPart,
    ToolCallPart,
)
from loopwright.providers.scripted import Reply

json_scalar = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
)
json_value = st.recursive(
    json_scalar,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
names = st.sampled_from(["add", "echo", "", "ad d", "nope"]) | st.text(max_size=12)
ids = st.sampled_from(["", "c1", "c1", "dup"]) | st.text(max_size=6)


@st.composite
def garbage_call(draw: st.DrawFn) -> ToolCallPart:
    name = draw(names)
    if draw(st.booleans()):
        args = draw(
            st.dictionaries(
                st.sampled_from(["a", "b", "text", "x"]) | st.text(max_size=5),
                json_value,
                max_size=4,
            )
        )
        return ToolCallPart(draw(ids), name, args, "")
    raw = draw(
        st.text(max_size=40)
        | st.sampled_from(
            ['{"a": 1, "b": 2,}', "```json\n{\"text\": 'hi'}\n```", "{'a': True}", "null", "[1,2]"]
        )
    )
    return ToolCallPart(draw(ids), name, {}, raw)


errors = st.sampled_from(
    [
        RateLimited("429", retry_after=0.01),
        RateLimited("429 long", retry_after=10_000),
        TransientProviderError("502"),
        MalformedResponse("garbled"),
        AuthError("401"),
        BadRequest("400"),
        ContextOverflow("too long"),
        ProviderError("generic"),
    ]
)

reply = st.one_of(
    st.text(max_size=30),
    st.lists(garbage_call(), min_size=1, max_size=4),
    errors,
    st.just(Message("assistant", ())),
    st.builds(lambda t: Message("assistant", (ReasoningPart(t),)), st.text(max_size=10)),
    st.builds(
        lambda t, calls: Message("assistant", (TextPart(t), *calls)),
        st.text(max_size=10),
        st.lists(garbage_call(), max_size=3),
    ),
    st.builds(
        lambda content, stop: Reply(content, stop_reason=stop),
        st.text(max_size=10),
        st.sampled_from(list(StopReason)),
    ),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=st.lists(reply, max_size=12),
    max_turns=st.integers(1, 8),
    max_errors=st.none() | st.integers(1, 4),
    repeat=st.none() | st.integers(2, 4),
)
def test_model_garbage_never_breaks_the_loop(
    script: list[object], max_turns: int, max_errors: int | None, repeat: int | None
) -> None:
    position = 0

    def fn(messages, request):  # type: ignore[no-untyped-def]
        nonlocal position
        position += 1
        if position > len(script):
            return "the end"
        return script[position - 1]

    agent = Agent(
        FunctionModel(fn),
        [add, echo],
        limits=Limits(
            max_turns=max_turns,
            max_consecutive_errors=max_errors,
            repeat_limit=repeat,
            model_retries=2,
            retry_max_delay=60,
        ),
        sleep=FakeSleep(),
    )
    result = asyncio.run(agent.arun("go"))
    assert isinstance(result, RunResult)
    assert result.messages[0] == Message.user("go")
    assert result.turns <= max_turns
    well_formed(result.messages)
    for message in result.messages:
        assert message.role in ("user", "assistant", "tool")
        for part in message.tool_results_parts:
            assert not part.is_error or part.error_kind

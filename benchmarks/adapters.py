"""Encode + decode cost per request, per provider adapter, vs the same SDK call by hand.

One "request" = encode a 50-message canonical history with 10 tools into the SDK call's
payload, then decode a streamed reply (text + two tool calls, ~25-40 wire events) into
canonical events and the final message. The floor ("by hand") is the same work written
the way an application calling the SDK directly would: build the kwargs from the same
messages and read text / tool arguments out of the same events, without name mapping, id
normalisation, partial-argument parsing, validation or provider_meta. Network and the
SDK's own (de)serialisation are excluded from both: the OpenAI replies are pre-built SDK
objects (``ChatCompletionChunk`` / typed Responses events), exactly what ``AsyncStream``
yields. Goal: ours <= 1.5x by hand.

The workload (history, tools, reply text) is shared with ``adapters_native.py`` (the
Anthropic / Gemini / Bedrock rows, merged here when importable).

Run: ``python benchmarks/adapters.py [--rounds N]``. Prints a table, then ONE JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from adapters_native import ARGS, REQUEST, STEP_ENCODERS, TEXT, pieces, step_encode_us

from loopwright.core.messages import TextPart, ToolCallPart, ToolResultPart
from loopwright.providers import openai_chat, openai_responses
from loopwright.providers._stream import StreamAccumulator
from loopwright.providers.registry import VENDORS

CHAT = openai_chat.OpenAIChatModel("gpt-4o", api_key="k", vendor=VENDORS["openai"])
RESP = openai_responses.OpenAIResponsesModel("gpt-5", api_key="k")


# ----------------------------------------------------------------- wire replies (SDK objects)


def chat_chunks() -> list[Any]:
    from openai.types.chat import ChatCompletionChunk

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4o",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    raw = [chunk({"role": "assistant", "content": ""})]
    raw += [chunk({"content": p}) for p in pieces(TEXT)]
    for i in range(2):
        raw.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {"name": f"tool_{i}", "arguments": ""},
                        }
                    ]
                }
            )
        )
        raw += [chunk({"tool_calls": [{"index": i, "function": {"arguments": a}}]}) for a in ARGS]
    raw.append(chunk({}, "tool_calls"))
    raw.append(
        {
            **chunk({}),
            "choices": [],
            "usage": {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940},
        }
    )
    return [_construct(ChatCompletionChunk, c) for c in raw]


def _construct(cls: Any, value: Any) -> Any:
    from openai._models import construct_type

    return construct_type(type_=cls, value=value)


def responses_events() -> list[Any]:
    from openai._models import construct_type
    from openai.types.responses import ResponseStreamEvent

    seq = iter(range(1, 1000))
    ev: list[dict[str, Any]] = []

    def emit(kind: str, **data: Any) -> None:
        ev.append({"type": kind, "sequence_number": next(seq), **data})

    msg = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }
    emit("response.output_item.added", output_index=0, item=msg)
    for p in pieces(TEXT):
        emit(
            "response.output_text.delta",
            item_id="msg_1",
            output_index=0,
            content_index=0,
            delta=p,
            logprobs=[],
        )
    done_msg = {
        **msg,
        "status": "completed",
        "content": [{"type": "output_text", "text": TEXT, "annotations": []}],
    }
    emit("response.output_item.done", output_index=0, item=done_msg)
    output: list[dict[str, Any]] = [done_msg]
    for i in range(2):
        item = {
            "id": f"fc_{i}",
            "type": "function_call",
            "call_id": f"call_{i}",
            "name": f"tool_{i}",
            "arguments": "",
            "status": "in_progress",
        }
        emit("response.output_item.added", output_index=i + 1, item=item)
        for a in ARGS:
            emit(
                "response.function_call_arguments.delta",
                item_id=f"fc_{i}",
                output_index=i + 1,
                delta=a,
            )
        full = {**item, "arguments": "".join(ARGS), "status": "completed"}
        emit("response.output_item.done", output_index=i + 1, item=full)
        output.append(full)
    emit(
        "response.completed",
        response={
            "id": "resp_1",
            "object": "response",
            "created_at": 1,
            "model": "gpt-5",
            "status": "completed",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 900,
                "output_tokens": 40,
                "total_tokens": 940,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        },
    )
    # What the SDK's AsyncStream does with each SSE payload (lenient construction).
    return [construct_type(type_=ResponseStreamEvent, value=e) for e in ev]


# ----------------------------------------------------------------- ours


def ours_chat(chunks: list[Any]) -> Any:
    payload, names = CHAT.encode(REQUEST)
    acc = StreamAccumulator(openai_chat.PROTOCOL, names.from_wire)
    for chunk in chunks:
        for _ in openai_chat.decode_chunk(chunk, acc):
            pass
    return payload, acc.finish()


def ours_responses(events: list[Any]) -> Any:
    payload, names = RESP.encode(REQUEST)
    acc = openai_responses.new_accumulator(names)
    for event in events:
        for _ in openai_responses.decode_event(event, acc):
            pass
    return payload, acc.finish()


# ----------------------------------------------------------------- by hand (the floor)


def hand_chat(chunks: list[Any]) -> Any:
    messages: list[dict[str, Any]] = [{"role": "system", "content": REQUEST.system}]
    for m in REQUEST.messages:
        if m.role == "tool":
            messages += [
                {"role": "tool", "tool_call_id": r.call_id, "content": r.content}
                for r in m.parts
                if isinstance(r, ToolResultPart)
            ]
            continue
        out: dict[str, Any] = {
            "role": m.role,
            "content": "".join(p.text for p in m.parts if isinstance(p, TextPart)),
        }
        calls = [
            {
                "id": p.id,
                "type": "function",
                "function": {"name": p.name, "arguments": json.dumps(dict(p.arguments))},
            }
            for p in m.parts
            if isinstance(p, ToolCallPart)
        ]
        if calls:
            out["tool_calls"] = calls
        messages.append(out)
    payload = {
        "model": "gpt-4o",
        "messages": messages,
        "max_completion_tokens": 512,
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.parameters),
                },
            }
            for t in REQUEST.tools
        ],
    }
    text: list[str] = []
    args: dict[int, list[str]] = {}
    meta: dict[int, tuple[str, str]] = {}
    finish = usage = None
    for chunk in chunks:
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.content:
                text.append(choice.delta.content)
            for tc in choice.delta.tool_calls or ():
                if tc.id:
                    meta[tc.index] = (tc.id, tc.function.name if tc.function else "")
                if tc.function and tc.function.arguments:
                    args.setdefault(tc.index, []).append(tc.function.arguments)
            finish = choice.finish_reason or finish
    calls = [(meta[i], json.loads("".join(a))) for i, a in args.items()]
    return payload, ("".join(text), calls, finish, usage)


def hand_responses(events: list[Any]) -> Any:
    items: list[dict[str, Any]] = []
    for m in REQUEST.messages:
        for p in m.parts:
            if isinstance(p, TextPart):
                items.append({"role": m.role, "content": p.text})
            elif isinstance(p, ToolCallPart):
                items.append(
                    {
                        "type": "function_call",
                        "call_id": p.id,
                        "name": p.name,
                        "arguments": json.dumps(dict(p.arguments)),
                    }
                )
            elif isinstance(p, ToolResultPart):
                items.append(
                    {"type": "function_call_output", "call_id": p.call_id, "output": p.content}
                )
    payload = {
        "model": "gpt-5",
        "instructions": REQUEST.system,
        "input": items,
        "max_output_tokens": 512,
        "stream": True,
        "tools": [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
                "strict": False,
            }
            for t in REQUEST.tools
        ],
    }
    text: list[str] = []
    calls: list[tuple[str, str, Any]] = []
    usage = None
    for event in events:
        if event.type == "response.output_text.delta":
            text.append(event.delta)
        elif event.type == "response.output_item.done" and event.item.type == "function_call":
            calls.append((event.item.call_id, event.item.name, json.loads(event.item.arguments)))
        elif event.type == "response.completed":
            usage = event.response.usage
    return payload, ("".join(text), calls, usage)


def _cold(model: Any, ours: Any) -> Any:
    """``ours`` with the history cache off: every message encoded from scratch (the first
    request of a conversation; later steps hit the cache for all but the new messages)."""
    encoder = model.encoder
    cold = type(encoder)(encoder.model, encoder.vendor, encoder.stream, None)

    def run(reply: list[Any]) -> Any:
        saved, model.encoder = model.encoder, cold
        try:
            return ours(reply)
        finally:
            model.encoder = saved

    return run


STEPS = {
    "openai-chat": lambda r: CHAT.encode(r),
    "openai-responses": lambda r: RESP.encode(r),
    **STEP_ENCODERS,
}
"""adapter -> encode(request) with the adapter's history cache, for ``step_encode_us``."""

CASES = {
    "openai-chat": (ours_chat, hand_chat, chat_chunks),
    "openai-responses": (ours_responses, hand_responses, responses_events),
}


COLD = {
    "openai-chat": _cold(CHAT, ours_chat),
    "openai-responses": _cold(RESP, ours_responses),
}


def check_equivalent() -> None:
    """Both paths must produce the same answer (else the timing compares nothing)."""
    _, done = ours_chat(chat_chunks())
    _, (text, calls, _, _) = hand_chat(chat_chunks())
    assert done.message.text == text, (done.message.text, text)
    assert [dict(c.arguments) for c in done.message.tool_calls] == [a for _, a in calls]
    _, done = ours_responses(responses_events())
    _, (text, rcalls, _) = hand_responses(responses_events())
    assert done.message.text == text
    assert [dict(c.arguments) for c in done.message.tool_calls] == [a for _, _, a in rcalls]


def paired_us(ours: Any, hand: Any, rounds: int, inner: int) -> tuple[float, float, float]:
    """Median microseconds per call of each, and the median per-round ratio. Rounds
    alternate ours / by hand so both see the same machine load (2 shared cores)."""
    ours_s: list[float] = []
    hand_s: list[float] = []
    for _ in range(rounds):
        for fn, out in ((ours, ours_s), (hand, hand_s)):
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            out.append((time.perf_counter() - start) / inner * 1e6)
    ratios = [o / h for o, h in zip(ours_s, hand_s, strict=True)]
    return statistics.median(ours_s), statistics.median(hand_s), statistics.median(ratios)


def rows(rounds: int, inner: int) -> list[dict[str, Any]]:
    out = []
    for name, (ours, hand, wire) in CASES.items():
        reply = wire()
        cold = COLD[name]
        ours_us, hand_us, ratio = paired_us(
            lambda o=ours, r=reply: o(r), lambda h=hand, r=reply: h(r), rounds, inner
        )
        cold_us, _, cold_ratio = paired_us(
            lambda c=cold, r=reply: c(r), lambda h=hand, r=reply: h(r), rounds, inner
        )
        out.append(
            {
                "adapter": name,
                "ours_us": round(ours_us, 1),
                "by_hand_us": round(hand_us, 1),
                "ratio": round(ratio, 2),
                "ours_cold_us": round(cold_us, 1),
                "cold_ratio": round(cold_ratio, 2),
                "ours_step_encode_us": round(step_encode_us(STEPS[name]), 1),
                "messages": len(REQUEST.messages),
                "tools": len(REQUEST.tools),
                "wire_events": len(reply),
            }
        )
    return out


def native_rows(cases: Any, rounds: int, inner: int) -> list[dict[str, Any]]:
    """The Anthropic / Gemini / Bedrock cases of ``adapters_native.py``, timed the same
    paired way as the OpenAI rows (``ours(reply, cold=True)`` bypasses the history cache)."""
    out = []
    for name, (ours, hand, wire) in cases.items():
        reply = wire()
        ours_us, hand_us, ratio = paired_us(
            lambda o=ours, r=reply: o(r), lambda h=hand, r=reply: h(r), rounds, inner
        )
        cold_us, _, cold_ratio = paired_us(
            lambda o=ours, r=reply: o(r, cold=True), lambda h=hand, r=reply: h(r), rounds, inner
        )
        out.append(
            {
                "adapter": name,
                "ours_us": round(ours_us, 1),
                "by_hand_us": round(hand_us, 1),
                "ratio": round(ratio, 2),
                "ours_cold_us": round(cold_us, 1),
                "cold_ratio": round(cold_ratio, 2),
                "ours_step_encode_us": round(step_encode_us(STEPS[name]), 1),
                "messages": len(REQUEST.messages),
                "tools": len(REQUEST.tools),
                "wire_events": len(reply),
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--inner", type=int, default=40)
    args = parser.parse_args()
    check_equivalent()
    table = rows(args.rounds, args.inner)
    try:
        import adapters_native

        table += native_rows(adapters_native.CASES, args.rounds, args.inner)
    except Exception as exc:  # the other adapters are optional here
        print(f"(native adapters skipped: {type(exc).__name__}: {exc})")
    print(
        f"{'adapter':<18}{'ours us':>10}{'by hand us':>12}{'ratio':>8}"
        f"{'cold us':>10}{'cold ratio':>12}{'step enc us':>13}{'events':>8}"
    )
    for r in table:
        print(
            f"{r['adapter']:<18}{r['ours_us']:>10}{r['by_hand_us']:>12}{r['ratio']:>8}"
            f"{r.get('ours_cold_us', '-'):>10}{r.get('cold_ratio', '-'):>12}"
            f"{r.get('ours_step_encode_us', '-'):>13}{r['wire_events']:>8}"
        )
    worst = max(r["ratio"] for r in table)
    print(
        json.dumps(
            {
                "benchmark": "adapters",
                "rows": table,
                "max_ratio": worst,
                "goal_ratio": 1.5,
                "meets_goal": worst <= 1.5,
                "rounds": args.rounds,
                "inner": args.inner,
                "nproc": os.cpu_count(),
                "python": platform.python_version(),
            }
        )
    )


if __name__ == "__main__":
    main()

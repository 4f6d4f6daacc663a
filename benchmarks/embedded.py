"""Embedded-model benchmark: grammar-constrained vs free decoding, time to the first
tool call, and prompt-cache reuse across turns. Prints figures, then ONE JSON line.

Run: python benchmarks/embedded.py [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from loopwright.core.events import ResponseDone
from loopwright.core.messages import Message, ToolResultPart
from loopwright.core.protocols import ModelRequest
from loopwright.providers import local_output as lo
from loopwright.providers import local_prompt as lp
from loopwright.providers import local_sampler as ls
from loopwright.providers.local import LocalModel
from loopwright.providers.local_grammar import json_grammar
from loopwright.providers.scripted import tool_call
from loopwright.tools.builtin import make_tools

SPECS = [t.spec for t in make_tools(["calculator", "get_weather", "read_file", "sql_query"])]
QUESTION = "What's the weather in Beijing?"


def decode_rate(llm, tokens, grammar, max_tokens: int, fast: bool = False) -> float:
    """Decode tokens/s with the prompt already cached (prompt eval excluded). ``fast``
    uses loopwright's shortlist grammar sampler (what LocalModel uses by default)."""
    llm.create_completion(tokens, max_tokens=1, temperature=0.0)  # warm the prefix cache
    first = None
    count = 0
    options = {"max_tokens": max_tokens, "temperature": 0.0}
    if fast:
        sampler = ls.GreedyGrammarSampler(llm, grammar)
        stream = ls.greedy_grammar_stream(llm, sampler, tokens, options)
    else:
        stream = llm.create_completion(tokens, grammar=grammar, stream=True, **options)
    for _chunk in stream:
        count += 1
        if first is None:
            first = time.perf_counter()
    end = time.perf_counter()
    return (count - 1) / (end - first) if first and count > 1 else float("nan")


async def first_call_seconds(model: LocalModel) -> float:
    start = time.perf_counter()
    async for event in model.stream(ModelRequest([Message.user(QUESTION)], tools=SPECS)):
        if isinstance(event, ResponseDone):
            assert event.message.tool_calls, "expected a tool call"
    return time.perf_counter() - start


def prompt_eval_seconds(llm, tokens) -> float:
    start = time.perf_counter()
    llm.create_completion(tokens, max_tokens=1, temperature=0.0)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    model = LocalModel()
    t0 = time.perf_counter()
    model.load()
    load_s = time.perf_counter() - t0
    llm = model._loaded.llm
    from llama_cpp import LlamaGrammar

    # Same prompt for both: the question, answer-only (free text vs {"answer": ...}).
    prompt = lp.render_prefix(SPECS, None) + lp.render_message(Message.user(QUESTION)) + lp.cue()
    tokens = llm.tokenize(prompt.encode(), add_bos=True)
    grammar = json_grammar(LlamaGrammar, lp.output_schema(SPECS, "both", lp.GrammarBounds()))
    # Interleaved so that load changes on a shared machine hit all three alike.
    free, stock, constrained = [], [], []
    for _ in range(runs):
        free.append(decode_rate(llm, tokens, None, 48))
        stock.append(decode_rate(llm, tokens, grammar, 48))
        constrained.append(decode_rate(llm, tokens, grammar, 48, fast=True))

    # Plain-Python floor: what our own prompt/grammar/parse work costs per turn.
    py = []
    for _ in range(runs * 20):
        s = time.perf_counter()
        text = lp.render_prefix(SPECS, None) + lp.render_message(Message.user(QUESTION)) + lp.cue()
        lp.output_schema(SPECS, "both", lp.GrammarBounds())
        lo.parse_output(
            '{"tool": "get_weather", "arguments": {"city": " Beijing"}}', ["get_weather"]
        )
        py.append(time.perf_counter() - s)
        assert text

    first_calls = []
    for _ in range(runs):
        llm.reset()
        first_calls.append(asyncio.run(first_call_seconds(model)))

    call = tool_call("get_weather", {"city": "Beijing"}, id="c1")
    history = [
        Message.user(QUESTION),
        Message("assistant", (call,)),
        Message.tool_results([ToolResultPart("c1", "get_weather", '{"city": "Beijing"}')]),
    ]
    turn = [
        lp.render_prefix(SPECS, None)
        + "".join(lp.render_message(m) for m in history[:n])
        + lp.cue()
        for n in (1, 3)
    ]
    t1, t2 = [], []
    for _ in range(runs):
        llm.reset()
        t1.append(prompt_eval_seconds(llm, llm.tokenize(turn[0].encode(), add_bos=True)))
        t2.append(prompt_eval_seconds(llm, llm.tokenize(turn[1].encode(), add_bos=True)))

    out = {
        "model": model.name,
        "load_s": round(load_s, 3),
        "prompt_tokens": len(tokens),
        "free_decode_tok_s": round(statistics.median(free), 1),
        "stock_grammar_decode_tok_s": round(statistics.median(stock), 1),
        "constrained_decode_tok_s": round(statistics.median(constrained), 1),
        "constrained_over_free": round(statistics.median(constrained) / statistics.median(free), 3),
        "first_tool_call_s": round(statistics.median(first_calls), 3),
        "turn1_prompt_eval_s": round(statistics.median(t1), 3),
        "turn2_prompt_eval_s": round(statistics.median(t2), 3),
        "turn2_over_turn1": round(statistics.median(t2) / statistics.median(t1), 3),
        "python_overhead_ms": round(statistics.median(py) * 1000, 3),
        "runs": runs,
    }
    for k, v in out.items():
        print(f"{k:28} {v}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()

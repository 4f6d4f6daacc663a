"""ReAct in text against the real ``llama_cpp.server`` serving the embedded model (Gemma
3 270M, a base model) with a plain chat template (``chatml``: no function calling, no
tool definitions on the wire). The model answers calculator questions by calling the
tool and giving its result as the final answer: the worked example and every move and
observation reach it as chat turns, the server honours the stop sequences, and the
replies are parsed as written."""

from __future__ import annotations

import ast
import operator
from collections.abc import Iterator

import pytest
from tests.llama_server import llama_server

from loopwright import Limits, RunStop, tool
from loopwright.core.events import ModelCallFinished, ToolCallFinished
from loopwright.core.protocols import ModelSettings
from loopwright.providers.registry import resolve_model
from loopwright.strategies import ReActText

pytestmark = pytest.mark.embedded

_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def _value(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_value(node.left), _value(node.right))
    raise ValueError("only numbers and + - * / are allowed")


@tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression such as "2 * (3 + 4)"."""
    result = _value(ast.parse(expression, mode="eval").body)
    return str(int(result) if float(result).is_integer() else result)


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with llama_server("chatml", tmp_path_factory.mktemp("llama")) as url:
        yield url


@pytest.mark.parametrize(
    ("question", "expected"), [("What is 17 * 23?", "391"), ("What is 125 + 389?", "514")]
)
async def test_react_text_answers_with_the_tool_result(
    plain_server: str, question: str, expected: str
) -> None:
    sent: list[dict[str, object]] = []

    def hook(direction: str, payload: object) -> None:
        if direction == "request" and isinstance(payload, dict):
            sent.append(payload)

    model = resolve_model("openai:gemma-3-270m", base_url=plain_server, on_payload=hook)
    strategy = ReActText(
        model,
        [calculate],
        max_steps=4,
        settings=ModelSettings(max_tokens=48, temperature=0.0),
        limits=Limits(max_turns=None, timeout=240),
    )
    events: list[object] = []
    result = await strategy.arun(question, on_event=events.append)
    assert result.stop is RunStop.FINAL_ANSWER, (result.detail, result.data)
    assert expected in result.answer
    assert "answered_from" not in result.data  # the model wrote the final answer itself
    calls = [e for e in events if isinstance(e, ToolCallFinished)]
    assert calls and calls[0].call.name == "calculate" and not calls[0].result.is_error
    assert calls[0].result.content == expected
    # plain text on the wire: no tool definitions, the format's stop sequences
    assert sent and all("tools" not in p for p in sent)
    assert all(p.get("stop") == ["\nObservation:", "\nQuestion:"] for p in sent)
    roles = [m["role"] for m in sent[-1]["messages"]]  # type: ignore[index, union-attr]
    assert roles[-2:] == ["assistant", "user"]  # the call and its observation as turns
    replies = [e.message.text for e in events if isinstance(e, ModelCallFinished)]
    assert all("\nObservation:" not in r for r in replies)  # the stop held

"""The concepts document's toy agent as a state graph: an LLM node and a tool node in a
loop, with add / multiply / divide tools, on loopwright's embedded offline model.

    python examples/graph/calculator.py "What is (3 + 5) * 8?"
    python examples/graph/calculator.py --model openai:gpt-4o-mini "What is 7 * 6?"
    loopwright graph draw examples/graph/calculator.py:graph

The state is LangGraph's ``MessagesState`` shape: ``messages`` accumulates through
``operator.add`` and ``llm_calls`` is overwritten. The model node calls the model with
the tool schemas; ``should_continue`` routes to the tool node while the last message
calls tools; the tool node runs the calls through loopwright's dispatcher (validation,
typed error results).
"""

from __future__ import annotations

import argparse
import operator
from typing import Annotated, Any

from typing_extensions import TypedDict

from loopwright import Message, Model, as_model
from loopwright.graph import END, START, StateGraph
from loopwright.graph.prebuilt import ToolNode, model_node
from loopwright.tools.builtin import make_tools

SYSTEM = "You are a helpful assistant tasked with performing arithmetic on a set of inputs."
DEFAULT_MODEL = "local:gemma-3-270m"


# loopwright's built-in add / multiply / divide: exact arithmetic, a division by zero
# comes back to the model as a typed tool error, and their descriptions let the embedded
# model plan both steps of "(3 + 5) * 8" in its first turn (see docs/providers.md).
TOOLS = make_tools(["add", "multiply", "divide"])


class MessagesState(TypedDict):
    messages: Annotated[list[Message], operator.add]
    llm_calls: int


def should_continue(state: MessagesState) -> str:
    """Run the tools while the model asks for them, else stop."""
    return "tool_node" if state["messages"][-1].tool_calls else END


def build(model: Model | str = DEFAULT_MODEL) -> Any:
    """The compiled agent graph for ``model`` (a Model or a model string)."""
    llm = model_node(as_model(model), TOOLS, system=SYSTEM)

    async def llm_call(state: MessagesState) -> dict:
        update = await llm(state)
        return {**update, "llm_calls": state.get("llm_calls", 0) + 1}

    builder = StateGraph(MessagesState)
    builder.add_node("llm_call", llm_call)
    builder.add_node("tool_node", ToolNode(TOOLS))
    builder.add_edge(START, "llm_call")
    builder.add_conditional_edges("llm_call", should_continue, ["tool_node", END])
    builder.add_edge("tool_node", "llm_call")
    return builder.compile()


graph = build()  # the embedded model loads on its first call, not here


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", nargs="?", default="What is (3 + 5) * 8?")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    args = parser.parse_args()
    app = graph if args.model == DEFAULT_MODEL else build(args.model)
    for update in app.stream({"messages": [Message.user(args.question)]}, {"recursion_limit": 12}):
        for node, change in update.items():
            for message in (change or {}).get("messages", []):
                calls = ", ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
                results = ", ".join(r.content for r in message.tool_results_parts)
                print(f"[{node}] {message.role}: {message.text or calls or results}")


if __name__ == "__main__":
    main()

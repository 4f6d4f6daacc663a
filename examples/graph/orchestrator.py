"""The concepts document's orchestrator-worker example: an orchestrator plans a report's
sections, ``Send`` starts one worker per section at run time (each with its own input),
all workers write to one shared ``completed_sections`` key through ``operator.add``, and
a synthesizer joins them.

    python examples/graph/orchestrator.py "agent runtimes"
    python examples/graph/orchestrator.py --model local:gemma-3-270m "agent runtimes"
    loopwright graph draw examples/graph/orchestrator.py:graph

Without ``--model`` a deterministic stand-in model plans three sections and writes each
(so the example runs anywhere, instantly); any model string works in its place.
"""

from __future__ import annotations

import argparse
import operator
from typing import Annotated, Any

from typing_extensions import TypedDict

from loopwright import FunctionModel, Message, Model, as_model
from loopwright.core.protocols import ModelRequest, complete
from loopwright.graph import END, START, Send, StateGraph


class State(TypedDict):
    topic: str
    sections: list[str]
    completed_sections: Annotated[list, operator.add]  # every worker writes here
    final_report: str


class WorkerState(TypedDict):
    section: str
    completed_sections: Annotated[list, operator.add]


def stand_in(messages: Any, request: ModelRequest) -> str:
    """Plans three sections, then writes one paragraph per section asked for."""
    prompt = messages[-1].text
    if prompt.startswith("Plan"):
        return "Introduction\nHow it works\nConclusion"
    return f"A paragraph about {prompt.removeprefix('Write the section: ')}."


def build(model: Model | str | None = None) -> Any:
    llm = as_model(model) if model is not None else FunctionModel(stand_in)

    async def ask(prompt: str) -> str:
        final = await complete(llm, ModelRequest([Message.user(prompt)]))
        if not hasattr(final, "message"):
            raise final.error  # type: ignore[union-attr]
        return final.message.text.strip()

    async def orchestrator(state: State) -> dict:
        plan = await ask(f"Plan the sections of a report on {state['topic']}, one title per line.")
        return {"sections": [line.strip("-* ") for line in plan.splitlines() if line.strip()][:5]}

    async def llm_call(state: WorkerState) -> dict:
        text = await ask(f"Write the section: {state['section']}")
        return {"completed_sections": [f"## {state['section']}\n\n{text}"]}

    def synthesizer(state: State) -> dict:
        return {"final_report": "\n\n---\n\n".join(state["completed_sections"])}

    def assign_workers(state: State) -> list[Send]:
        return [Send("llm_call", {"section": s}) for s in state["sections"]]

    builder = StateGraph(State)
    builder.add_node("orchestrator", orchestrator)
    builder.add_node("llm_call", llm_call)
    builder.add_node("synthesizer", synthesizer)
    builder.add_edge(START, "orchestrator")
    builder.add_conditional_edges("orchestrator", assign_workers, ["llm_call"])
    builder.add_edge("llm_call", "synthesizer")
    builder.add_edge("synthesizer", END)
    return builder.compile()


graph = build()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("topic", nargs="?", default="agent runtimes")
    parser.add_argument("--model", default=None)
    args = parser.parse_args()
    app = graph if args.model is None else build(args.model)
    print(app.invoke({"topic": args.topic})["final_report"])


if __name__ == "__main__":
    main()

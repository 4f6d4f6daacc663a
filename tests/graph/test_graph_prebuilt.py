"""Prebuilt nodes (an Agent as a node, model node, ToolNode), the two examples of the
concepts document, and ``loopwright graph draw``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import pytest
from click.testing import CliRunner
from typing_extensions import TypedDict

from loopwright import Agent, FunctionModel, Message, ScriptedModel, tool, tool_call
from loopwright.cli.main import main
from loopwright.core.events import RunFinished
from loopwright.graph import END, START, NodeRunEvent, StateGraph, add_messages
from loopwright.graph.prebuilt import ToolNode, agent_node, model_node, tools_condition

ROOT = Path(__file__).resolve().parents[2]


def load_example(name: str) -> ModuleType:
    path = ROOT / "examples" / "graph" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"graph_example_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Chat(TypedDict):
    messages: Annotated[list, add_messages]


def test_agent_node_appends_the_runs_messages() -> None:
    model = ScriptedModel([[tool_call("add", {"a": 2, "b": 3})], "2 + 3 = 5"])
    g = StateGraph(Chat)
    g.add_node("agent", agent_node(Agent(model, tools=[add])))
    g.add_edge(START, "agent")
    out = g.compile().invoke({"messages": ["What is 2 + 3?"]})
    roles = [m.role for m in out["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert out["messages"][-1].text == "2 + 3 = 5"
    assert out["messages"][2].tool_results_parts[0].content == "5"


def test_agent_node_run_events_stream_in_events_mode() -> None:
    model = ScriptedModel(["hello"])
    g = StateGraph(Chat)
    g.add_node("agent", agent_node(Agent(model)))
    g.add_edge(START, "agent")
    events = list(g.compile().stream({"messages": ["hi"]}, stream_mode="events"))
    run_events = [e for e in events if isinstance(e, NodeRunEvent)]
    assert run_events and all(e.node == "agent" for e in run_events)
    assert isinstance(run_events[-1].event, RunFinished)
    kinds = [e.type for e in events if not isinstance(e, NodeRunEvent)]
    assert kinds == ["step_finished", "task_started", "task_finished", "step_finished"]


def test_agent_node_needs_a_user_message_last() -> None:
    g = StateGraph(Chat)
    g.add_node("agent", agent_node(Agent(ScriptedModel(["x"]))))
    g.add_edge(START, "agent")
    with pytest.raises(Exception, match="must end with a user message"):
        g.compile().invoke({"messages": [Message.assistant("hi")]})


def test_agent_node_fails_when_its_run_ends_without_an_answer() -> None:
    # was: the node returned the run's messages as if it had answered (a model error
    # returned nothing, the graph ended "successfully" without an answer; a limit left
    # a tool call with no result in the conversation)
    from loopwright import Limits, RunStop
    from loopwright.graph.prebuilt import AgentRunFailed
    from loopwright.store import MemoryStore

    def down(messages: Any, request: Any) -> str:
        raise RuntimeError("model down")

    for agent, stop in (
        (Agent(FunctionModel(down)), RunStop.MODEL_ERROR),
        (
            Agent(
                ScriptedModel([[tool_call("add", {"a": 1, "b": 2})], "3"]),
                tools=[add],
                limits=Limits(max_turns=1),
            ),
            RunStop.MAX_TURNS,
        ),
    ):
        g = StateGraph(Chat)
        g.add_node("agent", agent_node(agent))
        g.add_edge(START, "agent")
        app = g.compile(checkpointer=MemoryStore())
        thread = {"configurable": {"thread_id": stop.value}}
        with pytest.raises(AgentRunFailed, match=f"stopped with {stop.value}") as caught:
            app.invoke({"messages": ["What is 1 + 2?"]}, thread)
        assert caught.value.result.stop is stop
        state = app.get_state(thread)  # the conversation is as it was; the node is next
        assert [m.role for m in state.values["messages"]] == ["user"]
        assert state.next == ("agent",)


def test_model_node_and_tool_node_loop_with_tools_condition() -> None:
    def reply(messages: Any, request: Any) -> Any:
        if messages[-1].role == "tool":
            return f"the sum is {messages[-1].tool_results_parts[0].content}"
        return [tool_call("add", {"a": 20, "b": 22})]

    g = StateGraph(Chat)
    g.add_node("llm", model_node(FunctionModel(reply), [add]))
    g.add_node("tools", ToolNode([add]))
    g.add_edge(START, "llm")
    g.add_conditional_edges("llm", tools_condition, ["tools", END])
    g.add_edge("tools", "llm")
    out = g.compile().invoke({"messages": ["add 20 and 22"]})
    assert out["messages"][-1].text == "the sum is 42"


def _calculator_model() -> FunctionModel:
    """Plays the seed's two model turns: add and multiply, then the answer."""

    def reply(messages: Any, request: Any) -> Any:
        assert request.system and "arithmetic" in request.system
        assert {t.name for t in request.tools} == {"add", "multiply", "divide"}
        results = [m for m in messages if m.role == "tool"]
        if not results:
            return [tool_call("add", {"a": 3, "b": 5}, id="c1")]
        if len(results) == 1:
            return [tool_call("multiply", {"a": 8, "b": 8}, id="c2")]
        if len(results) == 2:
            return [tool_call("divide", {"a": 64, "b": 0}, id="c3")]
        return f"The result of (3 + 5) * 8 is {results[1].tool_results_parts[0].content}."

    return FunctionModel(reply)


def test_calculator_example_loops_llm_and_tool_nodes() -> None:
    calculator = load_example("calculator")
    app = calculator.build(_calculator_model())
    out = app.invoke({"messages": [Message.user("Calculate (3 + 5) * 8")]})
    assert out["llm_calls"] == 4
    results = [m.tool_results_parts[0] for m in out["messages"] if m.role == "tool"]
    assert [r.content for r in results[:2]] == ["8", "64"]
    assert results[2].is_error  # dividing by zero came back to the model as a tool error
    assert out["messages"][-1].text == "The result of (3 + 5) * 8 is 64."


@pytest.mark.embedded
def test_calculator_example_on_the_embedded_model() -> None:
    pytest.importorskip("llama_cpp")
    calculator = load_example("calculator")
    out = calculator.graph.invoke(
        {"messages": [Message.user("What is (3 + 5) * 8?")]}, {"recursion_limit": 12}
    )
    calls = [c.name for m in out["messages"] for c in m.tool_calls]
    assert calls == ["add", "multiply"]
    assert "64" in out["messages"][-1].text


def test_orchestrator_example_sends_one_worker_per_section() -> None:
    orchestrator = load_example("orchestrator")
    app = orchestrator.build()
    updates = list(app.stream({"topic": "graphs"}, stream_mode="updates"))
    assert [next(iter(u)) for u in updates] == [
        "orchestrator",
        "llm_call",
        "llm_call",
        "llm_call",
        "synthesizer",
    ]
    report = app.invoke({"topic": "graphs"})["final_report"]
    assert report.count("## ") == 3
    assert report.index("Introduction") < report.index("How it works") < report.index("Conclusion")


def test_cli_graph_draw_prints_mermaid() -> None:
    result = CliRunner().invoke(
        main, ["graph", "draw", str(ROOT / "examples/graph/calculator.py") + ":graph"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("---\nconfig:")
    assert "\tllm_call -.-> tool_node;" in result.output
    assert "\ttool_node --> llm_call;" in result.output


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_colon", "must be MODULE:NAME"),
        ("loopwright.graph:START", "not a graph"),
        ("loopwright.graph:nothing_here", "has no attribute 'nothing_here'"),
        ("missing_file.py:graph", "no such file"),
    ],
)
def test_cli_graph_draw_errors_name_the_fix(target: str, message: str) -> None:
    result = CliRunner().invoke(main, ["graph", "draw", target])
    assert result.exit_code == 2
    assert message in result.output


def test_cli_graph_draw_of_a_module_that_raises_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "raising_graph_mod.py").write_text("raise RuntimeError('boom in graph')\n")
    monkeypatch.chdir(tmp_path)
    for target in ("raising_graph_mod.py:graph", "raising_graph_mod:graph"):
        sys.modules.pop("raising_graph_mod", None)
        result = CliRunner().invoke(main, ["graph", "draw", target])
        assert result.exit_code == 2, result.output  # the user's module failed, not loopwright
        assert "RuntimeError: boom in graph" in result.output
        assert "internal error" not in result.output


def test_model_node_streams_its_text_deltas_in_events_mode() -> None:
    from loopwright.core.events import ResponseDone, TextDelta

    g = StateGraph(Chat)
    g.add_node("llm", model_node(FunctionModel(lambda messages, request: "hello there"), []))
    g.add_edge(START, "llm")
    events = [
        e
        for e in g.compile().stream({"messages": ["hi"]}, stream_mode="events")
        if isinstance(e, NodeRunEvent)
    ]
    deltas = "".join(e.event.text for e in events if isinstance(e.event, TextDelta))
    assert deltas == "hello there"
    assert isinstance(events[-1].event, ResponseDone) and events[-1].node == "llm"

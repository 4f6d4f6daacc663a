"""An agent_node in a graph with a checkpointer runs its agent as a durable run: when the
process dies mid-node, resuming the graph continues the agent's run from its last
checkpoint -- the model turns it had made are not made again and a side effect is not
repeated -- instead of running the whole agent over."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from loopwright import Agent, Message, tool
from loopwright.core.messages import ToolCallPart
from loopwright.graph import START, StateGraph, add_messages
from loopwright.graph.prebuilt import agent_node
from loopwright.providers.scripted import FunctionModel


class Chat(TypedDict):
    messages: Annotated[list, add_messages]


class Killed(BaseException):
    """Stands for the process dying: nothing catches it."""


def mail_graph(store: Any, kill: dict[str, bool], sent: list[str], turns: list[int]) -> Any:
    @tool
    async def send_email(to: str) -> str:
        """Send an email (a side effect: not idempotent)."""
        sent.append(to)
        if kill.pop("in_tool", False):
            raise Killed
        return f"sent to {to}"

    def reply(messages: list[Message], request: Any) -> Message:
        turns.append(len(messages))
        if messages[-1].role == "user":
            return Message("assistant", (ToolCallPart("c1", "send_email", {"to": "ann"}),))
        if kill.pop("after_tool", False):
            raise Killed  # the tool ran and was checkpointed; the answer never came
        return Message.assistant(f"done: {messages[-1].tool_results_parts[0].content}")

    g = StateGraph(Chat)
    g.add_node("agent", agent_node(Agent(FunctionModel(reply), [send_email])))
    g.add_edge(START, "agent")
    return g.compile(checkpointer=store)


def test_a_killed_agent_run_resumes_from_its_checkpoint(store: Any, thread: dict) -> None:
    sent: list[str] = []
    turns: list[int] = []
    app = mail_graph(store, {"after_tool": True}, sent, turns)
    with pytest.raises(Killed):
        app.invoke({"messages": ["mail ann"]}, thread)
    assert sent == ["ann"] and turns == [1, 3]
    out = app.invoke(None, thread)
    assert out["messages"][-1].text == "done: sent to ann"
    assert [m.role for m in out["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert sent == ["ann"]  # not sent again
    assert turns == [1, 3, 3]  # only the answer was asked again, not the call


def test_a_side_effect_cut_short_is_not_repeated(store: Any, thread: dict) -> None:
    sent: list[str] = []
    turns: list[int] = []
    app = mail_graph(store, {"in_tool": True}, sent, turns)
    with pytest.raises(Killed):
        app.invoke({"messages": ["mail ann"]}, thread)
    out = app.invoke(None, thread)
    assert sent == ["ann"]
    [result] = out["messages"][2].tool_results_parts
    assert result.error_kind == "outcome_unknown", result
    assert turns == [1, 3]


def test_without_a_checkpointer_the_node_runs_as_before() -> None:
    sent: list[str] = []
    turns: list[int] = []
    app = mail_graph(None, {}, sent, turns)
    out = app.invoke({"messages": ["mail ann"]})
    assert out["messages"][-1].text == "done: sent to ann" and sent == ["ann"]

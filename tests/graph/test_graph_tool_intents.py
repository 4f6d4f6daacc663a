"""A ToolNode in a graph with a checkpointer records intents around non-idempotent tool
calls (loop/intents.py, as durable agent runs do): a run killed while the node ran does
not run a side effect again on resume -- a finished one gives its recorded result, one
that was running is reported as of unknown outcome; idempotent tools just run again."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from loopwright import Message, tool
from loopwright.core.messages import ToolCallPart
from loopwright.graph import START, StateGraph, add_messages
from loopwright.graph.prebuilt import ToolNode
from loopwright.loop.recovery import UNKNOWN_OUTCOME_TEXT


class Chat(TypedDict):
    messages: Annotated[list, add_messages]


class Killed(BaseException):
    """Stands for the process dying: nothing catches it."""


def mail_graph(store: Any, kill: dict[str, bool], sent: list[str], looked: list[str]) -> Any:
    @tool
    async def send_email(to: str) -> str:
        """Send an email (a side effect: not idempotent)."""
        sent.append(to)
        if kill.pop("in_tool", False):
            raise Killed
        return f"sent to {to}"

    @tool(idempotent=True)
    async def lookup(name: str) -> str:
        """Look a name up (safe to run again)."""
        looked.append(name)
        return f"{name}@example.com"

    node = ToolNode([send_email, lookup])

    async def tools(state: Chat) -> dict:
        out = await node(state)
        if kill.pop("after_tools", False):
            raise Killed  # the tools ran, the superstep never committed
        return out

    g = StateGraph(Chat)
    g.add_node("tools", tools)
    g.add_edge(START, "tools")
    return g.compile(checkpointer=store)


def request() -> dict:
    calls = (
        ToolCallPart("c1", "send_email", {"to": "ann"}),
        ToolCallPart("c2", "lookup", {"name": "ann"}),
    )
    return {"messages": ["mail ann", Message("assistant", calls)]}


def results(out: dict) -> dict[str, str]:
    return {r.call_id: r.content for r in out["messages"][-1].tool_results_parts}


def test_a_finished_side_effect_is_not_run_again(store: Any, thread: dict) -> None:
    sent: list[str] = []
    looked: list[str] = []
    app = mail_graph(store, {"after_tools": True}, sent, looked)
    with pytest.raises(Killed):
        app.invoke(request(), thread)
    out = app.invoke(None, thread)
    assert results(out) == {"c1": "sent to ann", "c2": "ann@example.com"}
    assert sent == ["ann"] and looked == ["ann", "ann"]


def test_a_side_effect_cut_short_is_reported_not_repeated(store: Any, thread: dict) -> None:
    sent: list[str] = []
    looked: list[str] = []
    app = mail_graph(store, {"in_tool": True}, sent, looked)
    with pytest.raises(Killed):
        app.invoke(request(), thread)
    out = app.invoke(None, thread)
    assert results(out)["c1"] == UNKNOWN_OUTCOME_TEXT
    assert sent == ["ann"]


def test_a_replayed_checkpoint_runs_the_tools_again(store: Any, thread: dict) -> None:
    sent: list[str] = []
    app = mail_graph(store, {}, sent, [])
    app.invoke(request(), thread)
    first = list(app.get_state_history(thread))[-1]  # the input checkpoint
    app.invoke(None, first.config)  # time travel: a new branch runs its nodes again
    assert sent == ["ann", "ann"]

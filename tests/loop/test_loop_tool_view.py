"""The tools an agent shows the model are built once per registry version and shared by
its runs (``loop.turn.AgentView``), and a registry change still reaches the next request."""

from __future__ import annotations

from loop_helpers import add

from loopwright import Agent, tool, tool_call
from loopwright.core.messages import Message
from loopwright.core.protocols import ModelRequest
from loopwright.providers.scripted import FunctionModel
from loopwright.tools import ToolContext


@tool
def mul(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def _recording() -> tuple[FunctionModel, list[ModelRequest]]:
    seen: list[ModelRequest] = []

    def reply(messages: list[Message], request: ModelRequest) -> str:
        seen.append(request)
        return "done"

    return FunctionModel(reply), seen


def test_runs_of_one_agent_share_one_tool_list_until_the_registry_changes() -> None:
    model, seen = _recording()
    agent = Agent(model, [add])
    agent.run("first")
    agent.run("second")
    assert [s.name for s in seen[0].tools] == ["add"]
    assert seen[1].tools is seen[0].tools  # not rebuilt per run
    agent.tools.register(mul)
    agent.run("third")
    assert [s.name for s in seen[2].tools] == ["add", "mul"]
    assert isinstance(seen[2].tools, tuple)  # shared by runs: nobody may append to it


_GOT: list[str | None] = []


@tool
def who(ctx: ToolContext) -> str:
    """Report the session."""
    _GOT.append(ctx.session_id)
    return "ok"


def test_a_tool_taking_a_context_registered_later_gets_the_runs_session_id() -> None:
    calls = iter([True, False])

    def reply(messages: list[Message], request: ModelRequest) -> object:
        return [tool_call("who", {})] if next(calls) else "done"

    agent = Agent(FunctionModel(reply), [add])
    agent.run("warm up: no tool takes a context yet")
    calls = iter([True, False])
    agent.tools.register(who)
    agent.run("now one does", session_id="s-view")
    assert _GOT == ["s-view"]

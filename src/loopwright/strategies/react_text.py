"""ReAct in text, for models without native tool calling.

Two formats, each a prompt file plus a parser:

* ``"react"`` (``react`` prompt): ``Thought:`` / ``Action:`` / ``Action Input: {json}``,
  then the result comes back as ``Observation:``; ``Final Answer:`` ends the run. The
  model's reply is cut at ``Observation:`` by a stop sequence (and again by the parser, for
  servers that ignore stop sequences), so the model never invents a tool's result.
* ``"hermes"`` (``hermes`` prompt): ``<tool_call>{"name": ..., "arguments": {...}}
  </tool_call>``, results in ``<tool_response>`` tags; a reply without a call is the answer.

Parsing is forgiving where it is safe (code fences, a missing closing tag on a reply cut by
its token limit, arguments given as a JSON string) and otherwise reports what is wrong: a
malformed reply goes back to the model as the observation, so it can correct itself.
Tool calls go through the tool dispatcher (validation, permissions, timeouts), with
``ToolCallStarted`` / ``ToolCallFinished`` events.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Final, Literal

from loopwright.core.messages import JSONValue, ToolCallPart
from loopwright.core.protocols import Model, ModelSettings
from loopwright.core.run import RunStop
from loopwright.loop.agent import ToolLike
from loopwright.loop.limits import Limits
from loopwright.prompts import tool_descriptions
from loopwright.strategies.prompts import strategy_prompt
from loopwright.strategies.runtime import BudgetExhausted, Outcome, Strategy, StrategyContext
from loopwright.tools import DispatchConfig, Dispatcher, ToolRegistry

Format = Literal["react", "hermes"]
_FINAL: Final = re.compile(r"^\s*Final Answer\s*:\s*", re.IGNORECASE | re.MULTILINE)
_ACTION: Final = re.compile(r"^\s*Action\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_INPUT: Final = re.compile(r"^\s*Action Input\s*:\s*", re.IGNORECASE | re.MULTILINE)
_OBSERVATION: Final = re.compile(r"^\s*Observation\s*:", re.IGNORECASE | re.MULTILINE)
_CALL: Final = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_THOUGHT: Final = re.compile(r"^\s*Thought\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)
_ECHO_MIN: Final = 24
REPEATED: Final = (
    "you already made this call; this is its result again. Use it: give the Final "
    "Answer, or call a different tool"
)
REACT_HELP: Final = (
    "Reply in the format: 'Thought: ...', then either 'Action: <tool>' and "
    "'Action Input: <JSON object>', or 'Final Answer: <answer>'."
)
HERMES_HELP: Final = (
    'Call a function as <tool_call>{"name": "<function>", "arguments": {...}}</tool_call>, '
    "or reply with the answer only."
)


@dataclass(frozen=True, slots=True)
class TextStep:
    """One parsed reply: a final answer, a tool call, or an error for the model."""

    text: str
    final: str | None = None
    tool: str | None = None
    arguments: dict[str, JSONValue] | None = None
    error: str | None = None


def _json_object(text: str) -> tuple[dict[str, JSONValue] | None, str]:
    """The first JSON object in ``text`` (code fences tolerated), or an error message."""
    start = text.find("{")
    if start == -1:
        return None, "no JSON object found"
    try:
        value, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError as exc:
        return None, f"the JSON is malformed ({exc})"
    if not isinstance(value, dict):
        return None, "expected a JSON object"
    return value, ""


def parse_react(text: str) -> TextStep:
    """Parse a ReAct reply (module docstring)."""
    cut = _OBSERVATION.search(text)
    if cut is not None:  # the model went on to invent an observation: drop it
        text = text[: cut.start()]
    action = _ACTION.search(text)
    final = _FINAL.search(text)
    if final is not None and (action is None or final.start() < action.start()):
        return TextStep(text, final=text[final.end() :].strip())
    if action is None:
        return TextStep(
            text, error=f"Your reply has neither an Action nor a Final Answer. {REACT_HELP}"
        )
    name = action.group(1).strip().strip("`'\"")
    given = _INPUT.search(text, action.end())
    if given is None:
        return TextStep(
            text, tool=name, error=f"Action {name!r} has no 'Action Input:' line. {REACT_HELP}"
        )
    arguments, problem = _json_object(text[given.end() :])
    if arguments is None:
        return TextStep(
            text,
            tool=name,
            error=f"The Action Input of {name!r} is unusable: {problem}. {REACT_HELP}",
        )
    return TextStep(text, tool=name, arguments=arguments)


def without_echo(reply: str, prompt: str) -> str:
    """``reply`` without a repetition of ``prompt`` at its start (small models often
    repeat the prompt before answering): the part after the longest common prefix, when
    that prefix is long enough to be a repetition; else ``reply`` itself."""
    limit = min(len(reply), len(prompt))
    if limit < _ECHO_MIN or reply[:_ECHO_MIN] != prompt[:_ECHO_MIN]:
        return reply
    n = _ECHO_MIN
    while n < limit and reply[n] == prompt[n]:
        n += 1
    return reply[n:]


def _call_key(step: TextStep) -> str:
    return json.dumps([step.tool, step.arguments], sort_keys=True)


def _without_label(text: str) -> str:
    """``text`` without a leading ``Thought:`` (the prompt already ends with one)."""
    return re.sub(r"^\s*Thought\s*:\s*", "", text, count=1, flags=re.IGNORECASE)


def parse_hermes(text: str) -> TextStep:
    """Parse a Hermes-style reply (module docstring)."""
    found = _CALL.search(text)
    if found is None:
        return TextStep(text, final=text.strip())
    value, problem = _json_object(found.group(1))
    if value is None:
        return TextStep(text, error=f"The <tool_call> is unusable: {problem}. {HERMES_HELP}")
    name, arguments = value.get("name"), value.get("arguments", {})
    if isinstance(arguments, str):
        arguments, problem = _json_object(arguments)
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return TextStep(
            text, error=f"The <tool_call> needs a 'name' and an 'arguments' object. {HERMES_HELP}"
        )
    return TextStep(text, tool=name, arguments=arguments)


class ReActText(Strategy):
    """A tool-using loop over plain text (module docstring). ``max_steps`` bounds the
    model calls of one run (stop ``max_turns``) on top of ``Limits``; ``settings`` are
    every call's settings (the format's stop sequence is added to them).

    A call the run has already made (same tool, same arguments) is not run again: the
    model gets the result it had, with a note to use it. A model that still asks for it
    ``max_repeats`` more times has nothing left to learn: the run ends with the latest
    result as its answer (``data["answered_from"] == "last_observation"``)."""

    name = "react_text"

    def __init__(
        self,
        model: Model,
        tools: ToolRegistry | Iterable[ToolLike],
        *,
        format: Format = "react",
        max_steps: int = 10,
        max_repeats: int = 1,
        limits: Limits | None = None,
        dispatch: DispatchConfig | None = None,
        settings: ModelSettings | None = None,
    ) -> None:
        super().__init__(limits)
        self.model = model
        self.format = format
        self.max_steps = max_steps
        self.max_repeats = max_repeats
        registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        self.dispatcher = Dispatcher(registry, dispatch)
        stop = ("\nObservation:",) if format == "react" else ("<tool_response>",)
        base = settings or ModelSettings()
        self.settings = replace(base, stop=(*base.stop, *stop))

    def _prompt(self, question: str, scratchpad: str) -> str:
        specs = self.dispatcher.registry.specs()
        if self.format == "react":
            return strategy_prompt(
                "react",
                tool_descriptions=tool_descriptions(specs),
                tool_names=", ".join(s.name for s in specs),
                question=question,
                scratchpad=scratchpad,
            )
        tools_json = "\n".join(
            json.dumps({"name": s.name, "description": s.description, "parameters": s.parameters})
            for s in specs
        )
        return strategy_prompt(
            "hermes", tools_json=tools_json, question=question, scratchpad=scratchpad
        )

    async def _solve(self, ctx: StrategyContext, prompt: str) -> Outcome:
        scratchpad = ""
        done: dict[str, str] = {}  # each call made (tool and arguments) -> its result
        repeats = 0
        for step_number in range(1, self.max_steps + 1):
            sent = self._prompt(prompt, scratchpad)
            step = self._parse(await ctx.ask(self.model, sent, settings=self.settings), sent)
            if step.final is not None:
                ctx.step("final", step=step_number)
                return step.final, {"steps": step_number, "scratchpad": scratchpad}
            if step.error is not None:
                observation = step.error
                ctx.step("malformed", step=step_number, problem=step.error)
            elif (key := _call_key(step)) in done:
                repeats += 1
                ctx.step("repeated_action", step=step_number, tool=step.tool, repeats=repeats)
                if repeats > self.max_repeats:
                    # the model only asks again for what it has: its latest result answers
                    answer = next(reversed(done.values()))
                    data = {"steps": step_number, "scratchpad": scratchpad}
                    return answer, {**data, "answered_from": "last_observation"}
                observation = f"{done[key]}\n({REPEATED})"
            else:
                observation = done[key] = await self._call(ctx, step, step_number)
            scratchpad += self._record(step, observation)
            ctx.record = {"steps": step_number, "scratchpad": scratchpad}
        raise BudgetExhausted(RunStop.MAX_TURNS, f"no final answer after {self.max_steps} steps")

    def _parse(self, reply: str, sent: str) -> TextStep:
        """Parse what the model wrote after any repetition of the prompt; a reply that
        only repeated the prompt is read whole (its last move is what it repeated)."""
        parse = parse_react if self.format == "react" else parse_hermes
        fresh = without_echo(reply, sent)
        step = parse(fresh)
        if step.error is not None and fresh is not reply:
            whole = parse(reply)
            if whole.error is None:
                return whole
        return step

    async def _call(self, ctx: StrategyContext, step: TextStep, number: int) -> str:
        assert step.tool is not None and step.arguments is not None
        call = ToolCallPart(f"text_{number}", step.tool, step.arguments)
        outcome = await ctx.call_tool(self.dispatcher, call)
        return outcome.result.content

    def _record(self, step: TextStep, observation: str) -> str:
        """The model's move and its observation, as the next prompt's scratchpad shows
        them: a call in the format's canonical lines (not the reply as written, which may
        repeat the prompt), else the reply's own text."""
        text = step.text.rstrip()
        if self.format == "react":
            cut = _OBSERVATION.search(text)
            text = text[: cut.start()].rstrip() if cut else text
            action = _ACTION.search(text)
            if step.error is None and action is not None:
                thoughts = _THOUGHT.findall(text[: action.start()])
                thought = thoughts[-1].strip() if thoughts else "I should use a tool."
                arguments = json.dumps(step.arguments, ensure_ascii=False)
                text = f"{thought}\nAction: {step.tool}\nAction Input: {arguments}"
            return f"Thought: {_without_label(text)}\nObservation: {observation}\n"
        found = _CALL.search(text)
        call = f"<tool_call>{found.group(1).strip()}</tool_call>" if found else text
        return f"{call}\n<tool_response>\n{observation}\n</tool_response>\n"

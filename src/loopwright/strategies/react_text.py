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

from loopwright.core.checks import check_choice, check_count
from loopwright.core.messages import JSONValue, Message, TextPart, ToolCallPart
from loopwright.core.protocols import Model, ModelRequest, ModelSettings
from loopwright.core.run import RunStop
from loopwright.core.tools import ToolSpec
from loopwright.loop.agent import ToolLike
from loopwright.loop.limits import Limits
from loopwright.prompts import PromptText
from loopwright.prompts.patterns import STRICT_JSON
from loopwright.prompts.template import fingerprints_of, prompt_message, request_fingerprints
from loopwright.strategies.prompts import strategy_prompt
from loopwright.strategies.runtime import (
    BudgetExhausted,
    Outcome,
    Prepared,
    Strategy,
    StrategyContext,
)
from loopwright.tools import DispatchConfig, Dispatcher, ToolRegistry

Format = Literal["react", "hermes"]
_FINAL: Final = re.compile(r"^\s*Final Answer\s*:\s*", re.IGNORECASE | re.MULTILINE)
_ACTION: Final = re.compile(r"^\s*Action\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_INPUT: Final = re.compile(r"^\s*Action Input\s*:\s*", re.IGNORECASE | re.MULTILINE)
_OBSERVATION: Final = re.compile(r"^\s*Observation\s*:", re.IGNORECASE | re.MULTILINE)
_CALL: Final = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_THOUGHT: Final = re.compile(r"^\s*Thought\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)
_USER_LINE: Final = re.compile(r"^\s*(Question|Observation)\s*:", re.IGNORECASE)
_MODEL_LINE: Final = re.compile(
    r"^\s*(Thought|Action|Action Input|Final Answer)\s*:", re.IGNORECASE
)
_QUESTION: Final = re.compile(r"^\s*Question\s*:", re.IGNORECASE | re.MULTILINE)
_ECHO_MIN: Final = 24
_ECHO_WITHIN: Final = 64

_DECODER: Final = STRICT_JSON
DEFAULT_EXAMPLE: Final = "react_example"
"""``ReActText(example=...)``'s default: the ``react_example`` prompt file."""
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
        value, _ = _DECODER.raw_decode(text, start)
    except ValueError as exc:
        return None, f"the JSON is malformed ({exc})"
    except RecursionError:
        return None, "the JSON is nested too deeply"
    if not isinstance(value, dict):
        return None, "expected a JSON object"
    return value, ""


def parse_react(text: str) -> TextStep:
    """Parse a ReAct reply (module docstring)."""
    for invented in (_OBSERVATION, _QUESTION):
        cut = invented.search(text)
        if cut is not None:  # the model went on to invent a result or a question: drop it
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
    """``reply`` without a repetition of ``prompt`` near its start (small models often
    repeat the prompt before answering, some after a chat template's role marker): the
    part after the longest common stretch, when it is long enough to be a repetition;
    else ``reply`` itself."""
    if len(prompt) < _ECHO_MIN:
        return reply
    at = reply.find(prompt[:_ECHO_MIN], 0, _ECHO_WITHIN + _ECHO_MIN)
    if at == -1:
        return reply
    limit = min(len(reply) - at, len(prompt))
    n = _ECHO_MIN
    while n < limit and reply[at + n] == prompt[n]:
        n += 1
    return reply[at + n :]


def _call_key(step: TextStep) -> str:
    return json.dumps([step.tool, step.arguments], sort_keys=True)


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
    every call's settings (the format's stop sequences are added to them).

    The run is a chat: the instructions and the question open it, each move of the model
    is an assistant turn (in the format's canonical lines) and each result a user turn
    (``Observation: ...`` / ``<tool_response>``). In the ``react`` format a worked
    ``example`` (a ReAct transcript: ``Question:`` and ``Observation:`` lines are the
    user's, the rest the model's) comes between the instructions and the question as
    earlier turns; the default is the ``react_example`` prompt, a calculator call. Small
    models copy the example's tool, so give one over your own tools (``None``: none).

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
        example: str | None = DEFAULT_EXAMPLE,
    ) -> None:
        super().__init__(limits)
        check_choice("ReActText(format=...)", format, ("react", "hermes"))
        check_count("ReActText(max_steps=...)", max_steps)
        check_count("ReActText(max_repeats=...)", max_repeats, minimum=0)
        self.model = model
        self.format = format
        self.max_steps = max_steps
        self.max_repeats = max_repeats
        registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        self.dispatcher = Dispatcher(registry, dispatch)
        self.example = example
        stop = ("\nObservation:", "\nQuestion:") if format == "react" else ("<tool_response>",)
        base = settings or ModelSettings()
        self.settings = replace(base, stop=(*base.stop, *stop))

    def _opening(self, question: str) -> list[Message]:
        """The turns every call starts with: instructions, example, question."""
        specs = self.dispatcher.registry.specs()
        if self.format == "hermes":
            tools_json = "\n".join(
                json.dumps(
                    {"name": s.name, "description": s.description, "parameters": s.parameters}
                )
                for s in specs
            )
            prompt = strategy_prompt("hermes", tools_json=tools_json, question=question)
            return [prompt_message(prompt)]
        rules = strategy_prompt(
            "react",
            tool_descriptions="\n".join(_describe(s) for s in specs),
            tool_names=", ".join(s.name for s in specs),
        )
        example = (
            strategy_prompt("react_example") if self.example == DEFAULT_EXAMPLE else self.example
        )
        turns = transcript_turns(example) if example else []
        if not turns:  # no example: the question ends the instructions' message
            return [prompt_message(_joined(rules, f"Question: {question}"))]
        lead = ""
        if turns[0][0] == "user":  # the example's question joins the instructions
            lead, turns = turns[0][1], turns[1:]
        messages = [prompt_message(_joined(rules, lead, also=example))]
        messages += [Message(role, (TextPart(text),)) for role, text in turns]
        messages.append(Message.user(f"Question: {question}"))
        return messages

    async def _solve(self, ctx: StrategyContext, prompt: str) -> Outcome:
        messages = self._opening(prompt)
        fingerprints = request_fingerprints(None, messages[:1])
        head = messages[0].text
        transcript: list[str] = []
        done: dict[str, str] = {}  # each call made (tool and arguments) -> its result
        repeats = 0
        for step_number in range(1, self.max_steps + 1):
            request = ModelRequest(tuple(messages), None, (), self.settings)
            reply = await ctx.ask(self.model, Prepared(request, fingerprints))
            step = self._parse(reply, head)
            if step.final is not None:
                ctx.step("final", step=step_number)
                return step.final, {"steps": step_number, "scratchpad": "".join(transcript)}
            if step.error is not None:
                observation = step.error
                ctx.step("malformed", step=step_number, problem=step.error)
            elif (key := _call_key(step)) in done:
                repeats += 1
                ctx.step("repeated_action", step=step_number, tool=step.tool, repeats=repeats)
                if repeats > self.max_repeats:
                    # the model only asks again for what it has: its latest result answers
                    answer = next(reversed(done.values()))
                    data = {"steps": step_number, "scratchpad": "".join(transcript)}
                    return answer, {**data, "answered_from": "last_observation"}
                observation = f"{done[key]}\n({REPEATED})"
            else:
                observation = done[key] = await self._call(ctx, step, step_number)
            move, result = self._record(step, observation)
            messages += (Message.assistant(move), Message.user(result))
            transcript.append(f"{move}\n{result}\n")
            ctx.record = {"steps": step_number, "scratchpad": "".join(transcript)}
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

    def _record(self, step: TextStep, observation: str) -> tuple[str, str]:
        """The model's move as the next call's assistant turn shows it -- a call in the
        format's canonical lines (not the reply as written, which may repeat the
        prompt), else the reply's own text -- and the observation's user turn."""
        text = step.text.rstrip()
        if self.format == "react":
            cut = _OBSERVATION.search(text)
            text = text[: cut.start()].rstrip() if cut else text
            action = _ACTION.search(text)
            if step.error is None and action is not None:
                thoughts = _THOUGHT.findall(text[: action.start()])
                thought = thoughts[-1].strip() if thoughts else "I should use a tool."
                arguments = json.dumps(step.arguments, ensure_ascii=False)
                text = f"Thought: {thought}\nAction: {step.tool}\nAction Input: {arguments}"
            return text, f"Observation: {observation}"
        found = _CALL.search(text)
        call = f"<tool_call>{found.group(1).strip()}</tool_call>" if found else text
        return call, f"<tool_response>\n{observation}\n</tool_response>"


def _joined(*parts: str, also: object = None) -> PromptText:
    """``parts`` as one prompt (blank lines between), with the fingerprints of every part
    and of ``also`` (the template a part was cut from)."""
    return PromptText("\n\n".join(p for p in parts if p), fingerprints_of(*parts, also))


def _describe(spec: ToolSpec) -> str:
    """``name: description Arguments: {"a": "integer", ...}`` -- the argument names and
    types, which the model must write in its ``Action Input``."""
    props = spec.parameters.get("properties")
    kinds = (
        {k: v.get("type", "any") if isinstance(v, dict) else "any" for k, v in props.items()}
        if isinstance(props, dict)
        else {}
    )
    return f"{spec.name}: {spec.description} Arguments: {json.dumps(kinds)}"


def transcript_turns(text: str) -> list[tuple[Literal["user", "assistant"], str]]:
    """A ReAct transcript as chat turns: ``Question:`` and ``Observation:`` lines (and the
    lines before the first move) are the user's, ``Thought:`` / ``Action:`` / ``Action
    Input:`` / ``Final Answer:`` lines the model's; other lines continue the turn above."""
    turns: list[tuple[Literal["user", "assistant"], list[str]]] = []
    role: Literal["user", "assistant"] = "user"
    for line in text.strip().splitlines():
        if _USER_LINE.match(line):
            role = "user"
        elif _MODEL_LINE.match(line):
            role = "assistant"
        if turns and turns[-1][0] == role:
            turns[-1][1].append(line)
        else:
            turns.append((role, [line]))
    return [(r, "\n".join(lines).strip()) for r, lines in turns]

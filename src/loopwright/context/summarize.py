"""Summarization compaction: older units replaced by a summary a model wrote.

Two halves, because a model call is async and a context policy is a pure function:

* :class:`Summarizer` (async) calls any core :class:`~loopwright.core.protocols.Model`
  (name a cheaper one than the agent's) to summarize everything but the most recent
  units, and keeps the result. It rolls: the next refresh summarizes the previous
  summary plus what was added since, so a summary is never re-made from the full
  history.
* :func:`apply_summary` / :class:`SummaryCompaction` (sync, pure) put a
  :class:`Summary` in place of the messages it covers, if the history still starts with
  them (checked by identity, falling back to equality for a history loaded from a store).

The loop uses them through its ``transform_context`` hook (async) or by awaiting
``DefaultPolicy.prepare`` there; see ``docs/context.md``. The summary message records
what it replaced in ``provider_meta["loopwright"]["summary"]`` (how many messages and
tokens, the index range, the tool names, the model), and is pinned so no later policy
drops it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from string import Template
from typing import Final, Literal

from loopwright.context.structure import META_NS, _facts, split_units
from loopwright.context.tokens import TokenCounter, estimate_counter
from loopwright.context.trimming import trim_text
from loopwright.core.events import ResponseDone
from loopwright.core.messages import (
    JSONValue,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from loopwright.core.protocols import Model, ModelRequest, ModelSettings, complete

SummaryRole = Literal["user", "system"]

_PROMPT_FILE: Final = "summary_prompt.txt"


def default_instructions(max_words: int) -> str:
    """The summarization instructions (``context/summary_prompt.txt``), rendered."""
    text = resources.files("loopwright.context").joinpath(_PROMPT_FILE).read_text("utf-8")
    return Template(text).substitute(max_words=max_words)


@dataclass(frozen=True, slots=True)
class Summary:
    """A summary of ``history[:upto]`` (``last`` is ``history[upto - 1]``)."""

    text: str
    upto: int
    last: Message
    covered_messages: int
    covered_tokens: int
    model: str
    tools: tuple[str, ...] = ()

    def is_valid_for(self, messages: Sequence[Message]) -> bool:
        """True when ``messages`` still begins with what this summary covers."""
        if self.upto <= 0 or self.upto > len(messages):
            return False
        if self.upto < len(messages) and messages[self.upto].role == "tool":
            return False  # a cut there would orphan results
        found = messages[self.upto - 1]
        return found is self.last or found == self.last

    def meta(self) -> dict[str, JSONValue]:
        return {
            "upto": self.upto,
            "covered_messages": self.covered_messages,
            "covered_tokens": self.covered_tokens,
            "tools": list(self.tools),
            "model": self.model,
        }

    def to_message(self, role: SummaryRole = "user") -> Message:
        header = (
            f"[Summary of the {self.covered_messages} earlier messages of this conversation, "
            "written by loopwright to save context]"
        )
        return Message(
            role,
            (TextPart(f"{header}\n{self.text}"),),
            {META_NS: {"pin": True, "layer": "summary", "summary": self.meta()}},
        )


def apply_summary(
    messages: Sequence[Message],
    summary: Summary,
    *,
    keep_task: bool = True,
    role: SummaryRole = "user",
    validate: bool = True,
) -> list[Message]:
    """``messages`` with ``messages[:summary.upto]`` replaced by the summary message.

    Pinned messages (system, constraints) in the covered part stay, in order, before
    the summary; so does the first user message (the task) when ``keep_task``. Returns
    a copy of ``messages`` unchanged when the summary does not apply to them
    (``validate=False`` skips that check for a caller that made it on an equivalent list).
    """
    if validate and not summary.is_valid_for(messages):
        return list(messages)
    head: list[Message] = []
    task_seen = False
    for m in messages[: summary.upto]:
        f = _facts(m)
        if f.pinned:
            head.append(m)
        elif keep_task and not task_seen and f.role == "user":
            head.append(m)
            task_seen = True
        elif f.role == "user":
            task_seen = True
    head.append(summary.to_message(role))
    head.extend(messages[summary.upto :])
    return head


@dataclass(slots=True)
class SummaryCompaction:
    """Sync policy applying a pre-computed :class:`Summary` (``None``: no change)."""

    summary: Summary | None = None
    keep_task: bool = True
    role: SummaryRole = "user"

    def __call__(self, messages: Sequence[Message], budget: int | None = None) -> list[Message]:
        if self.summary is None:
            return list(messages)
        return apply_summary(messages, self.summary, keep_task=self.keep_task, role=self.role)


def render_transcript(
    messages: Sequence[Message], counter: TokenCounter, max_result_tokens: int = 300
) -> str:
    """A plain-text transcript for the summarizer; long tool results are trimmed."""
    lines: list[str] = []
    for m in messages:
        for part in m.parts:
            match part:
                case TextPart(text=text):
                    lines.append(f"{m.role.upper()}: {text}")
                case ReasoningPart():
                    continue  # private reasoning: the decisions show in calls and text
                case ToolCallPart():
                    args = part.raw_arguments or json.dumps(
                        dict(part.arguments), ensure_ascii=False
                    )
                    lines.append(f"ASSISTANT called {part.name}({args}) [id {part.id}]")
                case ToolResultPart():
                    status = f"ERROR {part.error_kind or ''}".strip() if part.is_error else "ok"
                    body = trim_text(part.content, max_result_tokens, counter)
                    lines.append(f"TOOL {part.name} [{status}] -> {body}")
    return "\n".join(lines)


@dataclass(slots=True)
class Summarizer:
    """Summarizes older history with ``model`` and remembers the latest :class:`Summary`.

    ``keep_recent`` units (tool exchanges or single messages) stay verbatim. A failed
    model call never breaks the run: :attr:`last_error` says why, the previous summary
    (if still valid) is kept, and policies fall back to dropping old units.
    """

    model: Model
    keep_recent: int = 6
    max_summary_words: int = 200
    max_summary_tokens: int = 600
    trigger_tokens: int | None = None
    counter: TokenCounter = field(default_factory=estimate_counter)
    instructions: str | None = None
    role: SummaryRole = "user"
    keep_task: bool = True
    summary: Summary | None = None
    last_error: str | None = None
    calls: int = 0

    def current(self, messages: Sequence[Message]) -> Summary | None:
        """The remembered summary if it still applies to ``messages``."""
        s = self.summary
        return s if s is not None and s.is_valid_for(messages) else None

    def cut_point(self, messages: Sequence[Message]) -> int:
        """Index where verbatim history starts: the start of the ``keep_recent``-th last unit."""
        free = [u for u in split_units(messages) if u.kind not in ("system", "pinned")]
        if len(free) <= self.keep_recent:
            return 0
        return free[-self.keep_recent].start if self.keep_recent else len(messages)

    async def refresh(self, messages: Sequence[Message]) -> Summary | None:
        """Summarize up to :meth:`cut_point` if that covers more than the current summary."""
        upto = self.cut_point(messages)
        previous = self.current(messages)
        start = previous.upto if previous is not None else 0
        if upto <= start:
            return previous
        covered = [m for m in messages[start:upto] if not _facts(m).pinned]
        if self.keep_task:
            task = next((m for m in messages if m.role == "user" and not _facts(m).pinned), None)
            covered = [m for m in covered if m is not task]  # kept verbatim by apply_summary
        if not covered:
            return previous
        text = await self._call_model(covered, previous)
        if text is None:
            return previous
        tools = {p.name for m in covered for p in m.tool_calls}
        if previous is not None:
            tools |= set(previous.tools)
        self.summary = Summary(
            text=text,
            upto=upto,
            last=messages[upto - 1],
            covered_messages=len(covered) + (previous.covered_messages if previous else 0),
            covered_tokens=self.counter.count_messages(covered)
            + (previous.covered_tokens if previous else 0),
            model=self.model.name,
            tools=tuple(sorted(tools)),
        )
        return self.summary

    async def _call_model(self, covered: list[Message], previous: Summary | None) -> str | None:
        transcript = render_transcript(covered, self.counter)
        before = f"Previous summary:\n{previous.text}\n\n" if previous is not None else ""
        request = ModelRequest(
            messages=(Message.user(f"{before}<history>\n{transcript}\n</history>"),),
            system=self.instructions or default_instructions(self.max_summary_words),
            settings=ModelSettings(temperature=0.0, max_tokens=self.max_summary_tokens),
            metadata={"purpose": "context_summary"},
        )
        self.calls += 1
        final = await complete(self.model, request)
        if not isinstance(final, ResponseDone):
            self.last_error = f"summarizer model {self.model.name!r} failed: {final.error}"
            return None
        text = final.message.text.strip()
        if not text:
            self.last_error = f"summarizer model {self.model.name!r} returned an empty summary"
            return None
        self.last_error = None
        return text

    async def __call__(self, messages: Sequence[Message]) -> list[Message]:
        """A ``transform_context`` hook: refresh when over ``trigger_tokens``, then apply."""
        if (
            self.trigger_tokens is None
            or self.counter.count_messages(messages) > self.trigger_tokens
        ):
            await self.refresh(messages)
        s = self.current(messages)
        if s is None:
            return list(messages)
        return apply_summary(messages, s, keep_task=self.keep_task, role=self.role)

"""Taint: text read from outside must not be able to trigger a side effect on its own.

Delimiting untrusted results as data (:mod:`loopwright.core.untrusted`) asks the model
not to follow instructions inside them; a model that follows them anyway must still not
be able to act on them unsupervised. So a run that has read an untrusted result is
*tainted* (the result's tool, call id and an excerpt are kept in
:attr:`~loopwright.core.run.RunState.taint`, which persists with the state), and while it
is, a call to a tool with side effects runs only with a person's approval of that call:
the blanket ``DispatchConfig.confirm`` handler (often an auto-approver for unattended
runs) is not asked, :attr:`DispatchConfig.confirm_tainted` is, and without one the call
waits (``awaiting_confirmation``: the run pauses; resuming it with a decision for the
call is the approval).

What marks a run: a result of a tool flagged ``untrusted_output`` whose function ran or
whose stored result was replayed, error results included (an exception message can quote
outside content); and a user message holding retrieved text the runtime delimited (an
MCP resource placed in the conversation: :func:`retrieved_in`). What a side effect is: :func:`gated` (the tool's own
``confirm_when_tainted`` flag, else write/admin permission or not idempotent).
Only results of *earlier* turns taint a call: the calls of one batch were all written
before the model saw any of that batch's results. See docs/security.md, "Taint".
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence

from loopwright.core.messages import Message, ToolCallPart, ToolResultPart
from loopwright.core.run import TAINT_LOG_SIZE, RunState, TaintSource
from loopwright.core.tools import Permission, ToolSpec
from loopwright.tools.confirm import Confirmation
from loopwright.tools.decorator import Tool
from loopwright.tools.registry import ToolRegistry

EXCERPT_CHARS = 160
"""Characters of an untrusted result kept as its excerpt (enough to recognise it)."""

TaintConfirmHandler = Callable[
    [ToolCallPart, ToolSpec, Sequence[TaintSource]], "Confirmation | Awaitable[Confirmation]"
]
"""Asked for a side-effect call of a tainted run: the call, its tool, and the untrusted
results read before it (oldest first). Answer as a person would; see :class:`Confirmation`."""

_OPEN = UNTRUSTED_OPEN = "<untrusted-data "
"""What every block delimited as untrusted data starts with (a cheap first test)."""
_CLOSE = "\n</untrusted-data "
_BLOCK = re.compile(
    r'<untrusted-data id="([0-9a-f]{12})"[^>\n]*>\n(.*?)\n</untrusted-data id="\1">', re.S
)
_RETRIEVED = re.compile(
    r'<untrusted-data id="([0-9a-f]{12})" source="retrieved text"(?: label="([^"\n]*)")?>\n'
    r'(.*?)\n</untrusted-data id="\1">',
    re.S,
)


def gated(t: Tool) -> bool:
    """Whether calls to ``t`` need a person's approval while the run is tainted: its
    ``confirm_when_tainted`` flag when set, else write/admin permission or not idempotent
    (a tool that may change something, or that the runtime may not repeat freely)."""
    flag = t.confirm_when_tainted
    if flag is not None:
        return flag
    spec = t.spec
    return spec.permission >= Permission.WRITE or not spec.idempotent


def source_of(result: ToolResultPart) -> TaintSource:
    """The taint record of an untrusted ``result``: tool, call id, excerpt of its content
    (the delimiters the dispatcher added are left out)."""
    return TaintSource(result.name, result.call_id, excerpt(_unwrapped(result.content)))


def taint_in(messages: Iterable[Message], tools: ToolRegistry) -> list[TaintSource]:
    """The taint a conversation carries: for a run started from an earlier conversation
    (a chat's next turn) and for a runner that keeps no run state of its own but the
    conversation (a graph's tool node: the messages are its checkpointed state).

    A tool result is untrusted content when its tool in ``tools`` is flagged
    ``untrusted_output``, or when its content is a block the dispatcher delimited as
    untrusted data (a result from a tool this caller does not know, such as one run by
    another node). Error results count, as in the loop. Oldest first, the last
    :data:`~loopwright.core.run.TAINT_LOG_SIZE` as a run keeps them."""
    sources: list[TaintSource] = []
    for message in messages:
        if message.role == "user":
            sources.extend(retrieved_in(message))
        if message.role != "tool":
            continue
        for part in message.parts:
            if isinstance(part, ToolResultPart) and (
                _flagged(tools, part.name) or delimited(part.content)
            ):
                sources.append(source_of(part))
    return sources[-TAINT_LOG_SIZE:]


def retrieved_in(message: Message) -> list[TaintSource]:
    """The outside content a user message carries: each block the runtime delimited as
    retrieved text (:func:`~loopwright.core.untrusted.wrap_retrieved`: an MCP resource put
    in the conversation with ``ResourceRead.as_message()``/``for_context()``, one embedded
    in an MCP prompt, your own retrieval), recorded as its label (``server:uri``) with an
    excerpt. Such a message taints the run as the ``read_resource`` tool's result would:
    the person who placed it chose the resource, not what it says. The user's own words,
    and blocks delimited as "user input", do not taint."""
    if message.role != "user" or _OPEN not in message.text:
        return []
    found = []
    for match in _RETRIEVED.finditer(message.text):
        body = match.group(3)
        if hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()[:12] == match.group(1):
            label = match.group(2) or "retrieved text"
            found.append(TaintSource(label, "(user message)", excerpt(body)))
    return found


def mark_input(state: RunState, message: Message | None) -> None:
    """Taint ``state`` with the outside content of ``message``, an input it is given (a
    prompt, a steering or follow-up message): see :func:`retrieved_in`."""
    if message is not None:
        for source in retrieved_in(message):
            state.mark_tainted(source)


def _flagged(tools: ToolRegistry, name: str) -> bool:
    found = tools.get(name)
    return found is not None and found.untrusted_output


def delimited(content: str) -> bool:
    """Whether ``content`` holds a block delimited as untrusted data whose nonce matches
    its body (:func:`~loopwright.core.untrusted.wrap_untrusted`): made by the runtime,
    not a look-alike typed by a model, which would not carry the hash of its own text."""
    if _OPEN not in content:
        return False
    for match in _BLOCK.finditer(content):
        body = match.group(2).encode("utf-8", "surrogatepass")
        if hashlib.sha256(body).hexdigest()[:12] == match.group(1):
            return True
    return False


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def describe(taint: Sequence[TaintSource]) -> str:
    """One line naming the untrusted results a run has read, in the order read, each with
    its excerpt: what a confirmation request shows a person (the instruction that asks
    for this call may sit in any of them, not only the latest)."""
    if not taint:
        return "the run has read no untrusted content"
    return "the run read untrusted content before this call: " + "; ".join(map(_one, taint))


def _one(source: TaintSource) -> str:
    return f'{source.tool} (call {source.call_id}): "{source.excerpt}"'


def _unwrapped(content: str) -> str:
    start = content.find(_OPEN)
    if start == -1:
        return content
    body = content.find(">\n", start)
    end = content.rfind(_CLOSE)
    if body == -1 or end < body:
        return content
    return content[body + 2 : end]

"""MCP prompts as loopwright values: listing, argument checks, rendered messages.

An MCP prompt is a template a *person* chooses (a slash command in chat clients): the
server renders it with string arguments into user and assistant messages. Here it is
an :class:`MCPPrompt` (with its declared :class:`PromptArgument` s); arguments are
checked against that declaration before anything is sent (:func:`check_arguments`), and
the result is a :class:`RenderedPrompt` whose messages go to ``Agent.run``::

    rendered = toolset.get_prompt("review", {"code": source})
    agent.run(rendered.prompt, history=rendered.history)

The prompt's own text is the request the person chose and is kept as instructions; a
resource the server embeds in it is outside content and is delimited as untrusted data
unless the server is trusted. Images and audio in a prompt become a one-line
placeholder (user messages carry text only). See docs/mcp.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loopwright.core.errors import ToolErrorKind
from loopwright.core.messages import Message, TextPart
from loopwright.core.untrusted import wrap_retrieved
from loopwright.mcp import convert
from loopwright.mcp.resources import MCPRequestError

if TYPE_CHECKING:
    import mcp_types


@dataclass(frozen=True, slots=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True, slots=True)
class MCPPrompt:
    """One prompt a server lists, with the arguments it declares."""

    server: str
    name: str
    description: str = ""
    arguments: tuple[PromptArgument, ...] = ()

    @classmethod
    def of(cls, server: str, item: mcp_types.Prompt) -> MCPPrompt:
        args = tuple(
            PromptArgument(a.name, a.description or "", bool(a.required))
            for a in item.arguments or ()
        )
        return cls(server, item.name, item.description or item.title or "", args)

    def signature(self) -> str:
        """``review(code, language?)``: the arguments, optional ones marked ``?``."""
        names = [a.name + ("" if a.required else "?") for a in self.arguments]
        return f"{self.name}({', '.join(names)})"


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    """A prompt rendered by its server: ``messages`` (user and assistant turns, in
    order; consecutive turns of one role merged). Run it with
    ``agent.run(rendered.prompt, history=rendered.history)``."""

    server: str
    name: str
    description: str
    messages: tuple[Message, ...]

    @property
    def prompt(self) -> Message:
        """The last message, the user turn the agent answers."""
        if not self.messages or self.messages[-1].role != "user":
            raise MCPRequestError(
                f"prompt {self.name!r} of MCP server {self.server!r} does not end with a "
                "user message; pass rendered.messages as history and ask your own question",
                ToolErrorKind.INVALID_ARGUMENTS,
            )
        return self.messages[-1]

    @property
    def history(self) -> list[Message]:
        """The messages before :attr:`prompt`."""
        return list(self.messages[:-1])


def check_arguments(prompt: MCPPrompt, arguments: Mapping[str, object] | None) -> dict[str, str]:
    """``arguments`` checked against what ``prompt`` declares: every name known, every
    required one given, every value a string (MCP prompt arguments are text)."""
    where = f"prompt {prompt.name!r} of MCP server {prompt.server!r}"
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise MCPRequestError(
            f"{where}: arguments must be a dict of argument name to text, "
            f"got {type(arguments).__name__}",
            ToolErrorKind.INVALID_ARGUMENTS,
        )
    declared = {a.name: a for a in prompt.arguments}
    for name, value in arguments.items():
        if name not in declared:
            raise MCPRequestError(
                f"{where} has no argument {name!r}; its arguments: {_listing(prompt)}",
                ToolErrorKind.INVALID_ARGUMENTS,
            )
        if not isinstance(value, str):
            raise MCPRequestError(
                f"{where}: argument {name!r} must be a string (MCP prompt arguments are "
                f"text), got {type(value).__name__} {value!r}; pass str(value)",
                ToolErrorKind.INVALID_ARGUMENTS,
            )
    missing = [a for a in prompt.arguments if a.required and a.name not in arguments]
    if missing:
        first = missing[0]
        about = f" ({first.description})" if first.description else ""
        raise MCPRequestError(
            f"{where} needs argument {first.name!r}{about}; pass arguments="
            f"{{{', '.join(repr(a.name) + ': ...' for a in missing)}}}",
            ToolErrorKind.INVALID_ARGUMENTS,
        )
    return dict(arguments)  # type: ignore[arg-type]


def _listing(prompt: MCPPrompt) -> str:
    if not prompt.arguments:
        return "none"
    return ", ".join(a.name + (" (required)" if a.required else "") for a in prompt.arguments)


def rendered(prompt: MCPPrompt, result: mcp_types.GetPromptResult, trusted: bool) -> RenderedPrompt:
    """A :class:`RenderedPrompt` from the SDK's ``prompts/get`` result."""
    turns: list[tuple[str, list[str]]] = []
    for message in result.messages:
        text = _content_text(message.content, prompt.server, trusted)
        if turns and turns[-1][0] == message.role:
            turns[-1][1].append(text)
        else:
            turns.append((message.role, [text]))
    messages = tuple(Message(role, (TextPart("\n\n".join(texts)),)) for role, texts in turns)  # type: ignore[arg-type]
    description = result.description or prompt.description
    return RenderedPrompt(prompt.server, prompt.name, description, messages)


def _content_text(block: Any, server: str, trusted: bool) -> str:
    """One content block of a prompt message as text (see the module docstring)."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind == "resource":
        res = block.resource
        mime = res.mime_type or "application/octet-stream"
        text = getattr(res, "text", None)
        if text is None:
            text = convert.text_blob(mime, res.blob)
        if text is None:
            return f"[resource {res.uri} {mime}, {convert.decoded_size(res.blob)} bytes, not shown]"
        body = f"[resource {res.uri}]\n{text}"
        return body if trusted else wrap_retrieved(body, f"{server}:{res.uri}")
    if kind in ("image", "audio"):
        size = convert.decoded_size(block.data)
        return f"[{kind} {block.mime_type}, {size} bytes, not shown]"
    if kind == "resource_link":
        return f"[resource link {block.name} <{block.uri}>]"
    return f"[{kind or type(block).__name__} content, not shown]"

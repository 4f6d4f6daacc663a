"""Agents for CLI tests that run ``--agent cli_agents:NAME`` (in-process or a subprocess).

``hostile``: the model writes a lone surrogate and terminal escape sequences, calls a
tool whose result carries more of them, then answers with them.
``raising``: a factory that raises.
"""

from __future__ import annotations

from loopwright.core.messages import Message, ToolCallPart
from loopwright.loop import Agent
from loopwright.providers.scripted import FunctionModel
from loopwright.tools import tool

CLEAR = "\x1b[2J\x1b[H"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"
LINK = "\x1b]8;;https://evil.example\x1b\\click me\x1b]8;;\x1b\\"
HOSTILE_TEXT = f"bad \ud800 half {CLEAR}{CLIPBOARD}{LINK} \u202eevil"


@tool
def echo(text: str) -> str:
    """Echo the text back with an escape sequence."""
    return f"{CLIPBOARD}echo:{text}"


def _reply(messages, request):  # type: ignore[no-untyped-def]
    if messages[-1].role == "tool":
        return HOSTILE_TEXT
    return Message("assistant", (ToolCallPart("call-1", "echo", {"text": CLEAR}),))


def hostile() -> Agent:
    return Agent(FunctionModel(_reply), [echo])


def raising() -> Agent:
    raise RuntimeError("boom: the factory could not connect")


not_an_agent = 42

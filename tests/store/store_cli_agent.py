"""An agent for the cross-process CLI tests (``--agent store_cli_agent:build``).

Its ``send_email`` needs confirmation and appends to the file named by LW_TEST_OUTBOX.
"""

from __future__ import annotations

import os

from loopwright.core.messages import Message, ToolCallPart
from loopwright.loop import Agent
from loopwright.providers.scripted import FunctionModel
from loopwright.tools import tool


@tool(requires_confirmation=True, permission="write")
def send_email(to: str) -> str:
    """Send an email."""
    with open(os.environ["LW_TEST_OUTBOX"], "a", encoding="utf-8") as fh:
        fh.write(to + "\n")
    return f"sent to {to}"


def reply(messages, request):
    last = messages[-1]
    if last.role == "tool":
        return " / ".join(r.content for r in last.tool_results_parts)
    return Message("assistant", (ToolCallPart("call-1", "send_email", {"to": last.text}),))


def build() -> Agent:
    return Agent(FunctionModel(reply), [send_email])

"""The agents module the serve tests start `loopwright serve --agents served_agents:agents`
with (imported by the server subprocess from this folder)."""

from __future__ import annotations

import json
import os

from loopwright.core.messages import Message
from loopwright.loop import Agent
from loopwright.providers.scripted import FunctionModel, Reply, tool_call
from loopwright.tools import tool


def _user_texts(messages) -> list[str]:
    return [m.text for m in messages if m.role == "user"]


def _echo(messages, request):
    return Reply(f"echo: {_user_texts(messages)[-1]}", delay=0.02)


def _slow(messages, request):
    # answers with every user message heard so far, slowly (steering/follow-up/cancel)
    return Reply("heard: " + " | ".join(_user_texts(messages)), delay=0.6)


@tool(requires_confirmation=True, permission="write")
def send_email(to: str) -> str:
    """Send an email (appends it to $SERVE_TEST_OUTBOX)."""
    with open(os.environ["SERVE_TEST_OUTBOX"], "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"to": to}) + "\n")
    return f"sent to {to}"


def _mailer(messages, request):
    last: Message = messages[-1]
    if last.role == "tool":
        return last.tool_results_parts[0].content
    return [tool_call("send_email", {"to": "ann@example.org"}, id="call-1")]


def make_mailer() -> Agent:
    return Agent(FunctionModel(_mailer), [send_email])


agents = {
    "echo": Agent(FunctionModel(_echo, chunk_size=3)),
    "slow": Agent(FunctionModel(_slow)),
    "mailer": make_mailer,
}

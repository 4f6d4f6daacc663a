"""The agents module the serve tests start `loopwright serve --agents served_agents:agents`
with (imported by the server subprocess from this folder)."""

from __future__ import annotations

import json
import os
import time

from loopwright.core.messages import Message
from loopwright.durable import NOT_RUN
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


def _sent_keys() -> set[str]:
    try:
        with open(os.environ["SERVE_TEST_OUTBOX"], encoding="utf-8") as fh:
            return {json.loads(line)["key"] for line in fh if line.strip()}
    except FileNotFoundError:
        return set()


def _already_sent(key: str) -> object:
    """``outcome_check``: a send cut off by a crash either reached the outbox or not."""
    return f"sent {key}" if key in _sent_keys() else NOT_RUN


@tool(
    idempotency_key=lambda a: f"{a['token']}|{a['n']}",
    unknown_outcome="ask_tool",
    outcome_check=_already_sent,
)
def deliver(token: str, n: int) -> str:
    """Deliver message ``n`` (a side effect: one outbox line per key, never two)."""
    time.sleep(0.05)
    line = json.dumps({"key": f"{token}|{n}", "pid": os.getpid()}) + "\n"
    fd = os.open(os.environ["SERVE_TEST_OUTBOX"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line.encode())  # one write: a kill cannot tear a line
    finally:
        os.close(fd)
    return f"sent {token}|{n}"


SENDS = 4


def _sender(messages, request):
    # sends SENDS messages, one per turn, each model call taking 0.25 s; a send whose
    # result is an error (skipped by a hand-over, cut off by a crash) is asked again
    token = _user_texts(messages)[0]
    done = {
        r.content
        for m in messages
        for r in m.tool_results_parts
        if not r.is_error and isinstance(r.content, str)
    }
    todo = [n for n in range(SENDS) if f"sent {token}|{n}" not in done]
    if todo:
        call = tool_call("deliver", {"token": token, "n": todo[0]}, id=f"d{len(messages)}")
        return Reply([call], delay=0.25)
    return Reply(f"delivered {SENDS}", delay=0.05)


agents = {
    "echo": Agent(FunctionModel(_echo, chunk_size=3)),
    "slow": Agent(FunctionModel(_slow)),
    "mailer": make_mailer,
    "sender": lambda: Agent(FunctionModel(_sender), [deliver]),
}

"""A stand-in agent for batch tests (``--agent batch_agents:standin``); no real model.

What a prompt does is written in it, so that Ray worker processes (which share no memory
with the test) follow the same script; ``DIR`` is a folder the test owns:

* ``count DIR NAME`` -- appends a line to ``DIR/NAME.calls`` (how often the task ran),
  then answers ``answer NAME``.
* ``crash DIR NAME`` -- the first time (no ``DIR/NAME.crashed`` yet) kills the process
  running it, as a worker dying mid-task would; afterwards answers.
* ``flaky DIR NAME`` -- the first time ends with a non-retryable model error
  (``model_error``); afterwards answers.
* ``loop`` -- calls the ``ping`` tool forever (only a limit ends it).
* ``slow`` -- takes 30 s to reply.
* ``time ZONE`` -- calls the ``get_current_time`` tool of an MCP server
  (``--mcp mcp-server-time``), then answers with its result.
* anything else -- answers ``echo PROMPT``.

Every reply costs 0.25.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from pathlib import Path

from loopwright import Agent, FunctionModel, Reply, Usage, tool, tool_call
from loopwright.core.errors import BadRequest

COST = 0.25


@tool
def ping(n: int) -> str:
    """Answer pong."""
    return f"pong {n}"


def _first_time(path: Path) -> bool:
    try:
        path.touch(exist_ok=False)
    except FileExistsError:
        return False
    return True


def _reply(messages, request):  # type: ignore[no-untyped-def]
    usage = Usage(10, 5, cost=COST)
    prompt = next(m.text for m in messages if m.role == "user")
    verb, *args = prompt.split()
    if verb == "count":
        folder, name = Path(args[0]), args[1]
        with open(folder / f"{name}.calls", "a") as calls:
            calls.write(f"{os.getpid()}\n")
        return Reply(f"answer {name}", usage=usage)
    if verb == "crash":
        if _first_time(Path(args[0]) / f"{args[1]}.crashed"):
            os._exit(1)
        return Reply(f"answer {args[1]}", usage=usage)
    if verb == "flaky":
        if _first_time(Path(args[0]) / f"{args[1]}.flaked"):
            return Reply(BadRequest("the provider refused this once"), usage=usage)
        return Reply(f"answer {args[1]}", usage=usage)
    if verb == "loop":
        return Reply([tool_call("ping", {"n": len(messages)})], usage=usage)
    if verb == "time":
        results = [p for m in messages for p in m.tool_results_parts]
        if results:
            return Reply(f"time {results[-1].content}", usage=usage)
        return Reply([tool_call("get_current_time", {"timezone": args[0]})], usage=usage)
    if verb == "slow":
        return Reply("too late", usage=usage, delay=30.0)
    return Reply(f"echo {prompt}", usage=usage)


def standin() -> Agent:
    return Agent(FunctionModel(_reply), [ping])


class _Formatless(FunctionModel):
    follows_text_formats = False  # as the embedded model says of itself


def formatless() -> Agent:
    """The stand-in over a model that declares it cannot write strategies' text formats."""
    return Agent(_Formatless(_reply), [ping])


def marked_processes(mark: str) -> list[int]:
    """Processes (of any parent) whose environment carries ``LOOPWRIGHT_TEST_MARK=mark``."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        with contextlib.suppress(OSError):
            if f"LOOPWRIGHT_TEST_MARK={mark}".encode() in environ.read_bytes().split(b"\0"):
                found.append(int(environ.parent.name))
    return found


def time_server_config(folder: Path, mark: str) -> Path:
    """An MCP config file naming the real ``mcp-server-time``, its processes marked."""
    command = shutil.which("mcp-server-time") or str(
        Path(sys.executable).with_name("mcp-server-time")
    )
    config = folder / "mcp.json"
    server = {"command": command, "env": {"LOOPWRIGHT_TEST_MARK": mark}}
    config.write_text(json.dumps({"servers": {"time": server}}))
    return config

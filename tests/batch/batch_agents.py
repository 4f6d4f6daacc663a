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
* anything else -- answers ``echo PROMPT``.

Every reply costs 0.25.
"""

from __future__ import annotations

import os
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
    if verb == "slow":
        return Reply("too late", usage=usage, delay=30.0)
    return Reply(f"echo {prompt}", usage=usage)


def standin() -> Agent:
    return Agent(FunctionModel(_reply), [ping])

"""Which modules of ``src/loopwright`` one run passes through.

One run from prompt to answer: an ``Agent`` over the OpenAI Chat adapter talking to the
scripted HTTP server the provider tests use (``tests/providers/fakeserver.py``), with one
plain ``@tool``. The model asks for the tool once, then answers. A warm-up run comes first
so that import-time execution and one-time caches are not counted; the second run is
traced with ``sys.setprofile`` (call events, in every thread, so the dispatcher's worker
thread for a plain ``def`` tool is seen too) and the distinct ``loopwright.*`` modules
whose Python functions were entered are listed.

Run: ``python benchmarks/module_path.py`` (prints the modules and their count).
``tests/loop/test_module_path.py`` runs the same measurement and pins the count.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[1]
PROVIDER_TESTS = ROOT / "tests" / "providers"
if str(PROVIDER_TESTS) not in sys.path:
    sys.path.insert(0, str(PROVIDER_TESTS))

from contract import Answer, Call  # noqa: E402
from fakeserver import FakeServer  # noqa: E402
from kit_openai import ChatKit  # noqa: E402

from loopwright import Agent, tool  # noqa: E402

PACKAGE = "loopwright"
# The test suite's network guard (a pytest plugin wrapping socket connects) is not on a
# user's path; leave it out so the script and the test measure the same thing.
IGNORED = ("loopwright.testing.",)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _script(server: FakeServer, kit: ChatKit) -> None:
    call = Call(id="call_1", name="add", arguments={"a": 2, "b": 3})
    server.push(
        kit.reply(Answer(calls=(call,), stop="tool_use")),
        kit.reply(Answer(text="The sum is 5.")),
    )


def _module_of(frame: FrameType) -> str | None:
    name = frame.f_globals.get("__name__")
    if not isinstance(name, str) or name.startswith(IGNORED):
        return None
    if name == PACKAGE or name.startswith(PACKAGE + "."):
        return name
    return None


def traced_modules() -> list[str]:
    """The sorted ``loopwright.*`` modules entered by one warmed-up run."""
    kit = ChatKit()
    seen: set[str] = set()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            module = _module_of(frame)
            if module is not None:
                seen.add(module)

    with FakeServer() as server:
        agent = Agent(kit.model(server.url), tools=[add])
        _script(server, kit)
        warm = agent.run("What is 2 + 3?")
        assert warm.ok, warm
        _script(server, kit)
        threading.setprofile(profile)
        sys.setprofile(profile)
        try:
            result = agent.run("What is 2 + 3?")
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    assert result.ok, result
    assert result.answer == "The sum is 5.", result.answer
    return sorted(seen)


def main() -> None:
    modules = traced_modules()
    for module in modules:
        print(module)
    print(f"{len(modules)} modules of {PACKAGE}")


if __name__ == "__main__":
    main()

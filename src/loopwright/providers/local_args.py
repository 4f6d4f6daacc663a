"""Guards on the embedded model's tool arguments while they decode.

A 270M model fills a parameter it cannot read from the request with what the prompt
showed it: the worked example's value (``read_file(path="notes/todo.txt")`` for "What
does notes.txt say?"), or it runs one digit after another inside a string
(``LIMIT 1000000000``). :class:`ArgumentGuard` refuses, token by token, the two moves
that start those failures (generic; it reads only the prompt's examples and the
conversation):

* **leaving the request for an example**: a string argument that so far copies the
  request's text may not turn into the start of a value the prompt's worked examples
  show (and the request does not hold): ``notes`` is fine (the request says
  ``notes.txt``), ``notes/`` (of the example ``notes/todo.txt``) is not, and the model
  goes on with ``.txt``;
* **inventing long numbers**: a run of more than :data:`MAX_FREE_DIGITS` digits must
  be (the start of) a number the request or a tool result contains.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from loopwright.core.messages import Message
from loopwright.core.untrusted import unwrap_untrusted

MAX_FREE_DIGITS = 3
MIN_COPY_CHARS = 2
_CALL_LINE = re.compile(r'^Assistant: (\{"tool": .*\})$', re.MULTILINE)
_DIGITS = re.compile(r"\d+$")
_NUMBER = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class ArgumentGuard:
    """Called by the sampler with the text decoded so far and a candidate token's text;
    ``True`` refuses the candidate (see the module docstring)."""

    examples: tuple[str, ...]  # example values the request does not hold, lower-cased
    context: str  # the request and the results since it, lower-cased
    numbers: tuple[str, ...]  # digit runs of the request and the results

    def __call__(self, text: str, piece: str) -> bool:
        inside, value = _open_string(text)
        if inside:
            grown = value + piece.split('"', 1)[0]
            if self._leaves_for_example(value.lstrip(" ").lower(), grown.lstrip(" ").lower()):
                return True
        else:
            grown = text + piece
        run = _DIGITS.search(grown)
        if run is None or len(run.group(0)) <= MAX_FREE_DIGITS or not piece[-1:].isdigit():
            return False
        return not any(n.startswith(run.group(0)) for n in self.numbers)

    def _leaves_for_example(self, value: str, grown: str) -> bool:
        """The value so far is text of the request, and the candidate turns it into
        the start of an example value instead (``notes`` -> ``notes/``). An example
        used as a form (``SELECT ...``) is not refused: its start is not the
        request's text."""
        if len(value) < MIN_COPY_CHARS or value not in self.context or grown in self.context:
            return False
        return any(example.startswith(grown) for example in self.examples)


def argument_guard(prefix: str, messages: Sequence[Message]) -> ArgumentGuard:
    """The guard for a call turn: ``prefix`` is the rendered prompt before the
    conversation (its worked examples), ``messages`` the conversation."""
    context = _context(messages).lower()
    shown = {v.strip().lower() for v in _example_values(prefix)}
    examples = tuple(sorted(v for v in shown if len(v) >= MIN_COPY_CHARS and v not in context))
    numbers = tuple(dict.fromkeys(_NUMBER.findall(context)))
    return ArgumentGuard(examples, context, numbers)


def _context(messages: Sequence[Message]) -> str:
    """The last user message and the tool results after it."""
    texts: list[str] = []
    for message in reversed(messages):
        for part in message.tool_results_parts:
            texts.append(unwrap_untrusted(part.content) or part.content)
        if message.role == "user":
            texts.append(message.text)
            break
    return "\n".join(reversed(texts))


def _example_values(prefix: str) -> list[str]:
    found: list[str] = []
    for match in _CALL_LINE.finditer(prefix):
        try:
            call = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(call, dict):
            found += _strings(call.get("arguments"))
    return found


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _open_string(text: str) -> tuple[bool, str]:
    """Whether ``text`` (partial JSON) ends inside a string, and that string so far."""
    inside, escaped, start = False, False, 0
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"':
            inside = not inside
            start = i + 1
    return inside, text[start:] if inside else ""


__all__ = ["MAX_FREE_DIGITS", "ArgumentGuard", "argument_guard"]

"""llama.cpp grammars of the embedded model's turns: a JSON schema's grammar (with the
output starting with one space, as the worked examples do) and raw GBNF, both cached."""

from __future__ import annotations

import json
import re
from typing import Any


def json_grammar(grammar_cls: Any, schema: dict[str, Any]) -> Any:
    key = json.dumps(schema, sort_keys=True)
    cached = _GRAMMARS.get(key)
    if cached is None:
        from llama_cpp.llama_grammar import json_schema_to_gbnf

        text = spaced_root(json_schema_to_gbnf(json.dumps(schema)))
        cached = grammar_cls.from_string(no_control_chars(text), verbose=False)
        if len(_GRAMMARS) > 64:
            _GRAMMARS.clear()
        _GRAMMARS[key] = cached
    return cached


_GRAMMARS: dict[str, Any] = {}
# llama-cpp-python's JSON-schema converter lets a string hold any character but '"' and
# '\' (llama.cpp's own excludes control characters): a raw newline inside a string made
# the whole call invalid JSON, and the unparsable call was shown as the answer. The same
# holds for every negated class a string's ``pattern`` becomes (``[^,"\\]`` of a
# comma-joined format): "Lang Son in fahrenheit}}\nThe 2,000-mile" was no call at all.
_CONTROL = r"\x7F\x00-\x1F"
# a quoted literal (left alone: an enum value may spell "[^") or a character class
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]')


def no_control_chars(gbnf: str) -> str:
    """``gbnf`` with every negated character class (JSON string characters, a
    pattern's classes) kept to characters JSON allows unescaped in a string."""

    def fix(match: re.Match[str]) -> str:
        token = match.group(0)
        return "[^" + _CONTROL + token[2:] if token.startswith("[^") else token

    return _TOKEN.sub(fix, gbnf)


_ROOT_RULE = re.compile(r"^root ::= ", re.MULTILINE)


def spaced_root(gbnf: str) -> str:
    """``gbnf`` with its output starting with one space.

    Why: the prompt ends with ``Assistant:`` and every worked example continues
    ``Assistant: {"tool": ...``, which Gemma tokenizes as `` {"`` (space included). A
    grammar that starts at ``{`` forces the unspaced token ``{"`` the model never saw
    there, and its tool choice after that token no longer follows the examples (it fell
    back to the weather tool; see benchmarks/notes/embedded.md)."""
    if not _ROOT_RULE.search(gbnf):
        raise ValueError("grammar has no root rule")
    return 'root ::= " " json-root\n' + _ROOT_RULE.sub("json-root ::= ", gbnf, count=1)


def gbnf_grammar(grammar_cls: Any, text: str) -> Any:
    cached = _GRAMMARS.get(text)
    if cached is None:
        cached = grammar_cls.from_string(text, verbose=False)
        if len(_GRAMMARS) > 64:
            _GRAMMARS.clear()
        _GRAMMARS[text] = cached
    return cached


__all__ = ["gbnf_grammar", "json_grammar", "no_control_chars", "spaced_root"]

"""Consistency between the system prompt and the tools offered (see docs/prompts.md).

Two checks, run when a prompt is assembled:

* **conflicts** -- the system prompt forbids an action ("Never delete records") while a
  tool's name or description offers it ("Deletes rows matching the query"). The model
  sees both and behaves unpredictably; the report names the tool, the rule and the
  word that matched (actions are matched through a small synonym table: delete ~
  remove/erase/drop/purge, send ~ email/post/publish, pay ~ charge/transfer ...).
* **prose bans** -- the system prompt forbids a tool *by name* ("Do not use
  shell_exec"). A disabled tool must be left out of the tool list instead: that is
  reliable, prose is not. :func:`visible_tools` does that, and the report says which
  sentence to delete.

Prohibitions are recognised in English ("do not", "don't", "never", "must not",
"forbidden", "prohibited", "not allowed") and Chinese ("禁止", "不要", "不得", "严禁",
"不允许", "不能").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from loopwright.core.tools import ToolSpec

_NEGATION: Final = re.compile(
    r"\b(?:do not|don't|never|must not|mustn't|should not|shall not|cannot|can't|may not|"
    r"not allowed to|forbidden to|prohibited from|no)\b|禁止|不要|不得|严禁|不允许|不能|不可",
    re.IGNORECASE,
)
_SENTENCE: Final = re.compile(r"[^.!?\n。！？；;]+")
_WORD: Final = re.compile(r"[A-Za-z][A-Za-z_-]+|[\u4e00-\u9fff]{2}")

_SYNONYMS: Final[tuple[frozenset[str], ...]] = tuple(
    frozenset(group)
    for group in (
        {"delete", "remove", "erase", "drop", "destroy", "purge", "wipe", "truncate", "删除"},
        {"send", "email", "mail", "post", "publish", "message", "notify", "发送"},
        {"pay", "payment", "charge", "purchase", "buy", "transfer", "refund", "支付", "转账"},
        {"write", "modify", "update", "overwrite", "edit", "change", "alter", "修改", "写入"},
        {"execute", "exec", "run", "shell", "command", "执行"},
        {"deploy", "release", "ship", "部署"},
        {"share", "upload", "export", "leak", "上传", "导出"},
    )
)
_STOP: Final = frozenset(
    [
        "a",
        "an",
        "the",
        "any",
        "all",
        "of",
        "to",
        "for",
        "from",
        "in",
        "on",
        "with",
        "and",
        "or",
        "your",
        "user",
        "users",
        "data",
        "this",
        "that",
        "it",
        "them",
        "their",
        "its",
        "be",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "not",
        "never",
        "must",
        "should",
        "ever",
        "without",
        "use",
        "using",
        "call",
        "invoke",
        "try",
        "make",
        "ask",
        "answer",
        "guess",
    ]
)


def _stem(word: str) -> str:
    w = word.lower()
    for suffix in ("ing", "ion", "es", "ed", "s", "e"):
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


def _concepts(word: str) -> set[str]:
    """The stem of ``word`` plus the stems of its synonym group."""
    stem = _stem(word)
    out = {stem}
    for group in _SYNONYMS:
        if stem in {_stem(g) for g in group} or word in group:
            out |= {_stem(g) for g in group}
    return out


@dataclass(frozen=True, slots=True)
class Prohibition:
    sentence: str
    words: tuple[str, ...]  # content words after the negation


@dataclass(frozen=True, slots=True)
class Conflict:
    tool: str
    rule: str
    word: str

    def describe(self) -> str:
        return (
            f"tool {self.tool!r} offers {self.word!r} but the system prompt says "
            f"{self.rule!r}: remove the tool (or disable it) or change the rule"
        )


@dataclass(frozen=True, slots=True)
class ProseBan:
    tool: str
    rule: str

    def describe(self) -> str:
        return (
            f"the system prompt forbids tool {self.tool!r} in prose ({self.rule!r}); "
            "leave the tool out of the tool list (disabled=...) and delete the sentence"
        )


@dataclass(frozen=True, slots=True)
class ConsistencyReport:
    conflicts: tuple[Conflict, ...]
    prose_bans: tuple[ProseBan, ...]
    tools: tuple[ToolSpec, ...]  # the tools to offer: disabled ones left out

    @property
    def ok(self) -> bool:
        return not self.conflicts and not self.prose_bans

    def describe(self) -> list[str]:
        return [c.describe() for c in self.conflicts] + [b.describe() for b in self.prose_bans]


def prohibitions(system_prompt: str) -> list[Prohibition]:
    """Sentences of ``system_prompt`` that forbid something, with their content words."""
    found: list[Prohibition] = []
    for m in _SENTENCE.finditer(system_prompt):
        sentence = m.group().strip()
        neg = _NEGATION.search(sentence)
        if not sentence or neg is None:
            continue
        after = sentence[neg.end() :]
        words = tuple(w for w in _WORD.findall(after) if w.lower() not in _STOP)
        if words:
            found.append(Prohibition(sentence, words))
    return found


def visible_tools(tools: Iterable[ToolSpec], disabled: Iterable[str] = ()) -> tuple[ToolSpec, ...]:
    """``tools`` without the disabled ones: a disabled tool is not described at all."""
    off = set(disabled)
    return tuple(t for t in tools if t.name not in off)


def check_consistency(
    system_prompt: str, tools: Sequence[ToolSpec], *, disabled: Iterable[str] = ()
) -> ConsistencyReport:
    """Conflicts between the prompt's prohibitions and the offered tools (module docstring)."""
    offered = visible_tools(tools, disabled)
    all_names = {t.name for t in tools}
    rules = prohibitions(system_prompt)
    conflicts: list[Conflict] = []
    bans: list[ProseBan] = []
    for rule in rules:
        named = [n for n in all_names if re.search(rf"\b{re.escape(n)}\b", rule.sentence)]
        bans.extend(ProseBan(n, rule.sentence) for n in sorted(named))
        # the first content word is the forbidden action ("never DELETE records")
        action = _concepts(rule.words[0])
        for tool in offered:
            if tool.name in named:
                continue
            hit = _offers(tool, action)
            if hit is not None:
                conflicts.append(Conflict(tool.name, rule.sentence, hit))
    return ConsistencyReport(tuple(conflicts), tuple(bans), offered)


def _offers(tool: ToolSpec, action: set[str]) -> str | None:
    words = _WORD.findall(tool.name.replace("_", " ") + " " + tool.description)
    for w in words:
        if _stem(w) in action or (w in action):
            return w
    return None

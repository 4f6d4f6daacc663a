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
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

SHORTLIST = 48


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
    sampler: ``sample(ctx, idx)`` (which also accepts the token) and ``close()``."""

    def __init__(self, llm: Any, grammar: Any, shortlist: int = SHORTLIST) -> None:
        import llama_cpp
        import numpy as np

        self._lc = llama_cpp
        self._np = np
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

    def sample(self, ctx: Any, idx: int = -1) -> int:
        np = self._np
        ptr = self._lc.llama_get_logits_ith(ctx.ctx, idx)
        logits = np.ctypeslib.as_array(ptr, shape=(self._n_vocab,))
        k = self._shortlist
        best = np.argpartition(logits, -k)[-k:]
        ids = np.unique(np.concatenate([best, self._eog]))
        token = self._first_allowed(ids, logits)
        if token is None:
            self.full_scans += 1
            token = self._first_allowed(np.arange(self._n_vocab), logits)
        if token is None:  # the grammar allows nothing: end the generation
            token = int(self._eog[0])
        self._lc.llama_sampler_accept(self._smpl, token)
        return token

    def _first_allowed(self, ids: Any, logits: Any) -> int | None:
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
        allowed = np.isfinite(buf["logit"])
        if not allowed.any():
            return None
        scores = np.where(allowed, buf["logit"], -np.inf)
        return int(buf["id"][int(np.argmax(scores))])

    def close(self) -> None:
        if self._smpl is not None:
            self._lc.llama_sampler_free(self._smpl)
            self._smpl = None

    def __del__(self) -> None:
        self.close()


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

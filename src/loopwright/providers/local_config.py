"""Settings of the embedded model (:class:`LocalConfig`), read by every ``local_*`` module
that decides how a turn is prompted, chosen and decoded."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from loopwright.providers import local_prompt as lp


@dataclass(frozen=True, slots=True)
class LocalConfig:
    """Embedded-model settings. ``n_threads`` defaults to 1: two threads proved unstable
    on shared 2-core machines. ``max_tokens`` caps every turn (the request's
    ``settings.max_tokens`` may lower it). ``fast_grammar`` checks the grammar on the
    best-ranked tokens first (same greedy result, ~4x faster; see ``local_sampler``).
    ``plan``: the first turn after a user message writes a plan line (see
    ``local_plan``); ``False``: one call per turn; ``None`` (default):
    plan when the tools can chain (:func:`local_plan.can_chain`), since on single-tool
    questions the plain format chose tools more accurately (see benchmarks/notes).
    ``score_tools``: with greedy decoding and several tools, pick the tool by the
    log-probability of its whole name, then decode that tool's call (see
    ``LocalModel._narrow``); ``False``: plain greedy grammar decoding.
    ``grounded_answers``: decode answers under the grounded-answer grammar
    (``local_answer``), capped at ``answer_max_tokens``, with ``no_repeat_ngram``
    (0 turns the repetition rule off); tool calls and plans use the longer
    ``call_no_repeat_ngram`` (JSON repeats short token sequences legitimately).
    ``answer_margin`` / ``plan_answer_margin``: how much likelier (log-probability) a
    direct answer must be than a call / a plan line to be chosen with
    ``tool_choice="auto"``. Plan prompts show only "What is ..." requests, and other
    wordings of a chainable request ("Compute (6 + 7) * 3") scored up to +2.5 for an
    answer; 2.5 keeps them planned (benchmarks/README.md, "Embedded model").
    With ``name_gain``, each offered name's log-probability counts twice less its
    log-probability after a content-free request (``local.NEUTRAL_REQUEST``): the name
    scores on its own vary by several units ("calculator" -3.7, "sql_query" -4.3
    after "N/A"), and what says a request is about a tool is how much it raises that
    name ("What do you get when you multiply 13 by 7?": calculator +2.3 over "N/A",
    "What is the capital of Italy?" +1.0, "Who wrote War and Peace?" -0.9). With the
    gain, a call needs a 0.5 edge over an answer (``answer_margin`` -0.5), chosen on
    the built-in tools' questions of ``benchmarks/tool_choice_eval.py`` and 24 more,
    half of which no offered tool fits (benchmarks/notes/embedded.md, "BFCL round 8").
    ``call_overlap``: on a first turn, the share of the request's content words one
    tool must use (``local_prompt.tool_overlaps``) to count as talked about; a call
    also needs the request to give what the tool's required parameters need (see
    ``local_decide``, which owns the call-or-answer rule). 0.1 was chosen on a BFCL
    sample separate from the reported one (benchmarks/README.md, "Embedded model";
    ``float("inf")`` turns the rule off).
    ``overlap_weight``: with several tools, each tool's whole-name log-probability gets
    this weight times the share of the request's content words the tool uses
    (``local_prompt.tool_overlaps``): the name alone picked ``find_card_in_deck`` for
    a question about a president. On a BFCL ``multiple`` sample separate from the
    reported one (seed 1, 60 questions) the right tool was chosen 37 times by the name
    alone, 48 with weight 4, 55 with 8, 56 with 12 and 57 with 20 (0 turns it off).
    ``known_head``: with the fast sampler, an answer's ``{"answer":`` (known once the
    turn's kind is chosen) is read as prompt (one batch) instead of decoded token by
    token (see ``LocalModel._head``).
    ``ground_arguments``: hold arguments to what the request gives (an enum value it
    names, its numbers) and offer an optional parameter only when the request gives
    it (``local_ground.grounded_arguments``). ``max_digit_run`` bounds a run of digits in any
    constrained output (see ``local_sampler``)."""

    n_ctx: int = 4096
    n_threads: int = 1
    max_tokens: int = 384
    temperature: float = 0.0
    seed: int = 0
    grounded_answers: bool = True
    answer_max_tokens: int = 80
    answer_margin: float = -0.5
    name_gain: bool = True
    call_overlap: float = 0.1
    overlap_weight: float = 12.0
    plan_answer_margin: float = 2.5
    no_repeat_ngram: int = 4
    max_digit_run: int = 10
    call_no_repeat_ngram: int = 10
    ground_arguments: bool = True
    no_repeat_calls: bool = True
    fast_grammar: bool = True
    known_head: bool = True
    score_tools: bool = True
    plan: bool | None = None
    bounds: lp.GrammarBounds = field(default_factory=lp.GrammarBounds)
    cache_dir: Path | None = None


__all__ = ["LocalConfig"]

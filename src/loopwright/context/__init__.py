"""Context window management: token counting and pure ``messages -> messages`` policies.

See ``docs/context.md``. Everything here is a pure function of the history (no I/O),
except :class:`Summarizer`, which calls a model and is awaited by the loop's
``transform_context`` hook.
"""

from typing import TYPE_CHECKING

from loopwright.core.lazy import lazy_exports

if TYPE_CHECKING:
    from loopwright.context.default import DefaultPolicy
    from loopwright.context.policies import (
        Budget,
        ContextReport,
        SelectiveRetention,
        SlidingWindow,
        ToolResultTrimmer,
        default_importance,
        effective_budget,
    )
    from loopwright.context.structure import (
        ContextBudgetError,
        ContextError,
        PairingProblem,
        Repaired,
        ToolPairingError,
        Unit,
        find_pairing_problems,
        is_pinned,
        pin,
        repair_pairing,
        split_units,
    )
    from loopwright.context.summarize import (
        Summarizer,
        Summary,
        SummaryCompaction,
        apply_summary,
        render_transcript,
    )
    from loopwright.context.tokens import (
        CachedCounter,
        TokenCounter,
        bpe_counter,
        counter_for,
        encoding_for_model,
        estimate_counter,
        estimate_tokens,
        tokenizer_counter,
    )
    from loopwright.context.trimming import trim_message_results, trim_result_part, trim_text

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "loopwright.context.default": ("DefaultPolicy",),
        "loopwright.context.policies": (
            "Budget",
            "ContextReport",
            "SelectiveRetention",
            "SlidingWindow",
            "ToolResultTrimmer",
            "default_importance",
            "effective_budget",
        ),
        "loopwright.context.structure": (
            "ContextBudgetError",
            "ContextError",
            "PairingProblem",
            "Repaired",
            "ToolPairingError",
            "Unit",
            "find_pairing_problems",
            "is_pinned",
            "pin",
            "repair_pairing",
            "split_units",
        ),
        "loopwright.context.summarize": (
            "Summarizer",
            "Summary",
            "SummaryCompaction",
            "apply_summary",
            "render_transcript",
        ),
        "loopwright.context.tokens": (
            "CachedCounter",
            "TokenCounter",
            "bpe_counter",
            "counter_for",
            "encoding_for_model",
            "estimate_counter",
            "estimate_tokens",
            "tokenizer_counter",
        ),
        "loopwright.context.trimming": ("trim_message_results", "trim_result_part", "trim_text"),
    },
)

__all__ = [
    "Budget",
    "CachedCounter",
    "ContextBudgetError",
    "ContextError",
    "ContextReport",
    "DefaultPolicy",
    "PairingProblem",
    "Repaired",
    "SelectiveRetention",
    "SlidingWindow",
    "Summarizer",
    "Summary",
    "SummaryCompaction",
    "TokenCounter",
    "ToolPairingError",
    "ToolResultTrimmer",
    "Unit",
    "apply_summary",
    "bpe_counter",
    "counter_for",
    "default_importance",
    "effective_budget",
    "encoding_for_model",
    "estimate_counter",
    "estimate_tokens",
    "find_pairing_problems",
    "is_pinned",
    "pin",
    "render_transcript",
    "repair_pairing",
    "split_units",
    "tokenizer_counter",
    "trim_message_results",
    "trim_result_part",
    "trim_text",
]

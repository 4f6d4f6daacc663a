"""The prompt toolkit: strict templates, a versioned registry, composition and layered
assembly, the agent prompt patterns with output parsers, consistency checks, untrusted
content wrapping, and prompt regression testing. See ``docs/prompts.md``."""

from typing import TYPE_CHECKING

from loopwright.core.lazy import lazy_exports

if TYPE_CHECKING:
    from loopwright.core.untrusted import (
        UNTRUSTED_NOTICE,
        neutralise,
        wrap_retrieved,
        wrap_tool_result,
        wrap_untrusted,
        wrap_user_input,
    )
    from loopwright.prompts.compose import (
        AssembledPrompt,
        Layer,
        LayerResult,
        PromptAssembler,
        PromptBudgetError,
        PromptComposer,
        cut_to_tokens,
    )
    from loopwright.prompts.consistency import (
        Conflict,
        ConsistencyReport,
        ProseBan,
        check_consistency,
        prohibitions,
        visible_tools,
    )
    from loopwright.prompts.patterns import (
        PATTERN_NAMES,
        OutputParseError,
        Parsed,
        Pattern,
        builtin_registry,
        extract_json,
        load_pattern,
        templates_dir,
        tool_descriptions,
    )
    from loopwright.prompts.registry import PromptRegistry, RegistryError, Version, bucket
    from loopwright.prompts.template import (
        PromptError,
        PromptTemplate,
        PromptText,
        TemplateError,
        fingerprints_of,
        prompt_message,
        request_fingerprints,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "loopwright.core.untrusted": (
            "UNTRUSTED_NOTICE",
            "neutralise",
            "wrap_retrieved",
            "wrap_tool_result",
            "wrap_untrusted",
            "wrap_user_input",
        ),
        "loopwright.prompts.compose": (
            "AssembledPrompt",
            "Layer",
            "LayerResult",
            "PromptAssembler",
            "PromptBudgetError",
            "PromptComposer",
            "cut_to_tokens",
        ),
        "loopwright.prompts.consistency": (
            "Conflict",
            "ConsistencyReport",
            "ProseBan",
            "check_consistency",
            "prohibitions",
            "visible_tools",
        ),
        "loopwright.prompts.patterns": (
            "PATTERN_NAMES",
            "OutputParseError",
            "Parsed",
            "Pattern",
            "builtin_registry",
            "extract_json",
            "load_pattern",
            "templates_dir",
            "tool_descriptions",
        ),
        "loopwright.prompts.registry": ("PromptRegistry", "RegistryError", "Version", "bucket"),
        "loopwright.prompts.template": (
            "PromptError",
            "PromptTemplate",
            "PromptText",
            "TemplateError",
            "fingerprints_of",
            "prompt_message",
            "request_fingerprints",
        ),
    },
)

__all__ = [
    "PATTERN_NAMES",
    "UNTRUSTED_NOTICE",
    "AssembledPrompt",
    "Conflict",
    "ConsistencyReport",
    "Layer",
    "LayerResult",
    "OutputParseError",
    "Parsed",
    "Pattern",
    "PromptAssembler",
    "PromptBudgetError",
    "PromptComposer",
    "PromptError",
    "PromptRegistry",
    "PromptTemplate",
    "PromptText",
    "ProseBan",
    "RegistryError",
    "TemplateError",
    "Version",
    "bucket",
    "builtin_registry",
    "check_consistency",
    "cut_to_tokens",
    "extract_json",
    "fingerprints_of",
    "load_pattern",
    "neutralise",
    "prohibitions",
    "prompt_message",
    "request_fingerprints",
    "templates_dir",
    "tool_descriptions",
    "visible_tools",
    "wrap_retrieved",
    "wrap_tool_result",
    "wrap_untrusted",
    "wrap_user_input",
]

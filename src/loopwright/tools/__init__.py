"""Tools: typed functions a model can call, and the dispatcher that runs those calls.

See ``docs/tools.md``. Everything public is re-exported here.
"""

from typing import TYPE_CHECKING

from loopwright.core.lazy import lazy_exports

if TYPE_CHECKING:
    from loopwright.core.errors import ToolError, ToolErrorKind, TransientToolError
    from loopwright.core.run import TaintSource
    from loopwright.core.tools import Permission, ToolSpec, UnknownOutcomePolicy
    from loopwright.tools.confirm import Confirmation, ConfirmHandler
    from loopwright.tools.decorator import BusinessValidator, IdempotencyKeyFn, Tool, as_tool, tool
    from loopwright.tools.dispatcher import (
        AfterToolCall,
        BeforeToolCall,
        DispatchConfig,
        Dispatcher,
        DispatchOutcome,
        error_result,
        over_cap_result,
        skipped_result,
    )
    from loopwright.tools.execution import ERROR_KINDS
    from loopwright.tools.invocation import ToolContext
    from loopwright.tools.ledger import IdempotencyLedger, MemoryLedger
    from loopwright.tools.registry import ToolRegistry
    from loopwright.tools.repair import RepairResult, repair_arguments
    from loopwright.tools.retry import NO_RETRY, RetryPolicy
    from loopwright.tools.schema import FunctionSchema, function_schema, type_schema
    from loopwright.tools.taint import TaintConfirmHandler
    from loopwright.tools.truncate import render_result, truncate_result
    from loopwright.tools.validation import (
        SchemaValidator,
        Violation,
        check_schema,
        validate_arguments,
        validator_for,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "loopwright.core.errors": ("ToolError", "ToolErrorKind", "TransientToolError"),
        "loopwright.core.run": ("TaintSource",),
        "loopwright.core.tools": ("Permission", "ToolSpec", "UnknownOutcomePolicy"),
        "loopwright.tools.confirm": ("Confirmation", "ConfirmHandler"),
        "loopwright.tools.decorator": (
            "BusinessValidator",
            "IdempotencyKeyFn",
            "Tool",
            "as_tool",
            "tool",
        ),
        "loopwright.tools.execution": ("ERROR_KINDS",),
        "loopwright.tools.dispatcher": (
            "AfterToolCall",
            "BeforeToolCall",
            "DispatchConfig",
            "Dispatcher",
            "DispatchOutcome",
            "error_result",
            "over_cap_result",
            "skipped_result",
        ),
        "loopwright.tools.invocation": ("ToolContext",),
        "loopwright.tools.ledger": ("IdempotencyLedger", "MemoryLedger"),
        "loopwright.tools.registry": ("ToolRegistry",),
        "loopwright.tools.repair": ("RepairResult", "repair_arguments"),
        "loopwright.tools.retry": ("NO_RETRY", "RetryPolicy"),
        "loopwright.tools.schema": ("FunctionSchema", "function_schema", "type_schema"),
        "loopwright.tools.taint": ("TaintConfirmHandler",),
        "loopwright.tools.truncate": ("render_result", "truncate_result"),
        "loopwright.tools.validation": (
            "SchemaValidator",
            "Violation",
            "check_schema",
            "validate_arguments",
            "validator_for",
        ),
    },
)

__all__ = [
    "ERROR_KINDS",
    "NO_RETRY",
    "AfterToolCall",
    "BeforeToolCall",
    "BusinessValidator",
    "ConfirmHandler",
    "Confirmation",
    "DispatchConfig",
    "DispatchOutcome",
    "Dispatcher",
    "FunctionSchema",
    "IdempotencyKeyFn",
    "IdempotencyLedger",
    "MemoryLedger",
    "Permission",
    "RepairResult",
    "RetryPolicy",
    "SchemaValidator",
    "TaintConfirmHandler",
    "TaintSource",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolErrorKind",
    "ToolRegistry",
    "ToolSpec",
    "TransientToolError",
    "UnknownOutcomePolicy",
    "Violation",
    "as_tool",
    "check_schema",
    "error_result",
    "function_schema",
    "over_cap_result",
    "render_result",
    "repair_arguments",
    "skipped_result",
    "tool",
    "truncate_result",
    "type_schema",
    "validate_arguments",
    "validator_for",
]

"""loopwright: a small, fast, typed runtime for LLM agents."""

from loopwright.core import (
    Message,
    ModelSettings,
    Permission,
    RunResult,
    RunStop,
    ToolSpec,
    Usage,
)

__version__ = "0.1.0"

__all__ = [
    "Message",
    "ModelSettings",
    "Permission",
    "RunResult",
    "RunStop",
    "ToolSpec",
    "Usage",
    "__version__",
]

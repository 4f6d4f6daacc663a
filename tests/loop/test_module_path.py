"""How many modules of ``src/loopwright`` one run passes through (issue 10).

Runs the measurement of ``benchmarks/module_path.py``: a warmed-up run of an ``Agent`` over
the OpenAI Chat adapter (against the scripted HTTP server of the provider tests) with one
plain ``@tool``, traced with ``sys.setprofile``. The ceiling is the count measured when the
test was written, so the path can only grow by changing this number deliberately.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

# Measured: 14 modules (26, then 18 before: tools/attempt+threads, loop/request+detect,
# providers/transport+_http, _common+_names and _stream+_partial_json were merged; the
# per-run tool list and context budget moved off the run path; then the model stream
# events moved beside the Model protocol (core.protocols), running a tool function into
# tools.execution, usage settlement (Prices, settle) into providers._stream beside its
# one caller, and the shared openai SDK helpers into providers.openai_chat; see
# benchmarks/module_path.py for the list).
CEILING = 14

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "module_path.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("module_path_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_one_tool_run_through_openai_chat_stays_within_the_module_ceiling() -> None:
    modules = _load().traced_modules()
    # The trace really saw the run: the adapter, the loop and the dispatcher.
    for needed in (
        "loopwright.providers.openai_chat",
        "loopwright.loop.agent",
        "loopwright.tools.dispatcher",
    ):
        assert needed in modules
    assert all(m.startswith("loopwright") for m in modules)
    assert len(modules) <= CEILING, modules

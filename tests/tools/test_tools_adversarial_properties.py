"""The dispatcher's contract under arbitrary model output, checked with hypothesis:
whatever the tool name, arguments or raw argument text, one call gives one result with
text content and, when it failed, a known error kind; nothing is raised."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopwright.core.messages import ToolCallPart, ToolResultPart
from loopwright.tools import Dispatcher, ToolRegistry, tool
from loopwright.tools.builtin import BuiltinConfig, make_tools
from loopwright.tools.execution import ERROR_KINDS


@tool
def typed(n: int, xs: list[str], flag: bool = False, ratio: float | None = None) -> dict:
    """A tool with typed parameters."""
    return {"n": n, "xs": xs, "flag": flag, "ratio": ratio}


def _dispatcher(root: Path) -> Dispatcher:
    db = root / "t.db"
    if not db.exists():
        conn = sqlite3.connect(db)
        conn.execute("CREATE TABLE t (a INTEGER, b TEXT)")
        conn.execute("INSERT INTO t VALUES (1, 'x')")
        conn.commit()
        conn.close()
    (root / "a.txt").write_text("hello")
    config = BuiltinConfig(root=root, database=db, outbox=root / "outbox.jsonl")
    names = ["calculator", "add", "divide", "read_file", "sql_query", "get_weather"]
    return Dispatcher(ToolRegistry([*make_tools(names, config), typed]))


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
_NAMES = st.sampled_from(
    ["calculator", "add", "divide", "read_file", "sql_query", "get_weather", "typed", "nope", ""]
)
_KEYS = st.sampled_from(
    ["expression", "a", "b", "path", "query", "params", "city", "n", "xs", "zz"]
)


def _check(result: ToolResultPart) -> None:
    assert isinstance(result, ToolResultPart)
    assert isinstance(result.content, str)
    if result.is_error:
        assert result.error_kind in ERROR_KINDS, result


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=_NAMES, arguments=st.dictionaries(_KEYS, _JSON, max_size=4))
async def test_any_parsed_arguments_give_one_result(
    tmp_path_factory: Any, name: str, arguments: dict[str, Any]
) -> None:
    root = tmp_path_factory.getbasetemp() / "adversarial"
    root.mkdir(exist_ok=True)
    out = await _dispatcher(root).run_one(ToolCallPart("c1", name, arguments))
    _check(out.result)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=_NAMES, raw=st.text(max_size=120) | st.builds(json.dumps, _JSON))
async def test_any_raw_argument_text_gives_one_result(
    tmp_path_factory: Any, name: str, raw: str
) -> None:
    root = tmp_path_factory.getbasetemp() / "adversarial"
    root.mkdir(exist_ok=True)
    out = await _dispatcher(root).run_one(ToolCallPart("c1", name, {}, raw))
    _check(out.result)

"""@tool flags, Tool behaviour, argument conversion and the registry rules."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import pytest
from pydantic import BaseModel

from loopwright.core.tools import Permission, UnknownOutcomePolicy
from loopwright.tools import Tool, ToolContext, ToolRegistry, Violation, tool


class Unit(enum.Enum):
    C = "c"
    F = "f"


@dataclass(frozen=True)
class Point:
    x: int
    y: int = 0


class Box(BaseModel):
    w: int
    h: int


@tool
def describe(
    unit: Unit, at: Point, box: Box, pair: tuple[int, str], tags: set[str], ratio: float = 1.0
) -> str:
    """Describe things."""
    return f"{unit!r}|{at!r}|{box.w}x{box.h}|{pair!r}|{sorted(tags)}|{ratio!r}"


async def test_invoke_converts_json_to_python_types() -> None:
    out = await describe.invoke(
        {
            "unit": "f",
            "at": {"x": 1},
            "box": {"w": 2, "h": 3},
            "pair": [1, "a"],
            "tags": ["b", "a"],
            "ratio": 2,
        },
        ToolContext("c1"),
    )
    assert out == "<Unit.F: 'f'>|Point(x=1, y=0)|2x3|(1, 'a')|['a', 'b']|2.0"


def test_tool_is_still_callable_like_the_function() -> None:
    assert describe(Unit.C, Point(1, 2), Box(w=1, h=1), (1, "x"), {"t"}).startswith("<Unit.C")


async def test_context_injection_and_sync_in_thread() -> None:
    import threading

    seen: dict[str, object] = {}

    @tool
    def who(x: int, ctx: ToolContext) -> int:
        seen["ctx"] = ctx
        seen["thread"] = threading.current_thread().name
        return x

    ctx = ToolContext("call-9", "k", 2, "s1", {"user": "u"})
    assert await who.invoke({"x": 5}, ctx) == 5
    assert seen["ctx"] is ctx
    assert seen["thread"] == "loopwright-tool"


async def test_inline_sync_runs_on_the_loop_thread() -> None:
    import threading

    @tool(inline=True)
    def where() -> str:
        return threading.current_thread().name

    assert await where.invoke({}, ToolContext("c")) == threading.current_thread().name


def test_flags_land_in_the_spec() -> None:
    @tool(
        name="rm",
        description="Delete a file.",
        requires_confirmation=True,
        permission="admin",
        idempotent=True,
        timeout=2.5,
        max_result_chars=100,
        unknown_outcome="ask_tool",
    )
    def remove(path: str) -> None:
        pass

    s = remove.spec
    assert (s.name, s.description, s.requires_confirmation, s.permission) == (
        "rm",
        "Delete a file.",
        True,
        Permission.ADMIN,
    )
    assert (s.idempotent, s.timeout, s.max_result_chars) == (True, 2.5, 100)
    assert s.unknown_outcome is UnknownOutcomePolicy.ASK_TOOL


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"name": "bad name"}, "invalid"),
        ({"timeout": 0}, "timeout"),
        ({"max_result_chars": 0}, "max_result_chars"),
        ({"permission": "root"}, "unknown permission"),
    ],
)
def test_bad_flags_are_errors(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        tool(**kwargs)(lambda: None)  # type: ignore[arg-type]


def test_from_schema_passes_arguments_through() -> None:
    t = Tool.from_schema(
        "echo",
        "Echo.",
        {"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]},
        lambda v: v,
        permission="write",
    )
    assert t.spec.permission is Permission.WRITE
    assert t.validate({"v": 1}) == [Violation("/v", "1 is not of type 'string'")]
    assert t.validate({"v": "x"}) == []


def test_from_schema_rejects_invalid_schema() -> None:
    with pytest.raises(ValueError, match=r"tool 'x'.*not a valid JSON Schema"):
        Tool.from_schema("x", "", {"type": "object", "properties": {"a": {"type": 5}}}, print)
    with pytest.raises(ValueError, match='"type": "object"'):
        Tool.from_schema("x", "", {"type": "array"}, print)


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {"type": "object", "properties": {"a": {"$ref": "#/$defs/gone"}}},
            r"at /properties/a/\$ref: \$ref '#/\$defs/gone' points to nothing",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "(["}}},
            r"at /properties/a/pattern: '\(\[' is not a valid regular expression",
        ),
        (
            {"type": "object", "patternProperties": {"x(": {"type": "integer"}}},
            r"'x\(' is not a valid regular expression",
        ),
    ],
)
def test_a_schema_that_fails_every_call_is_refused_when_built(
    schema: dict[str, object], message: str
) -> None:
    """Both passed the metaschema; every call then failed with "dispatch failed:
    PointerToNowhere" / "unterminated character set" and a logged traceback."""
    with pytest.raises(
        ValueError, match=rf"tool 'x': parameters is not a valid JSON Schema .*{message}"
    ):
        Tool.from_schema("x", "", schema, print)


def test_refs_that_resolve_are_accepted() -> None:
    schema = {
        "type": "object",
        "$defs": {"n": {"type": "integer"}},
        "properties": {
            "a": {"$ref": "#/$defs/n"},
            "b": {
                "$id": "urn:inner",
                "$defs": {"m": {"type": "string"}},
                "$ref": "urn:inner#/$defs/m",
            },
            "c": {"enum": [{"$ref": "data, not a reference"}]},
        },
    }
    t = Tool.from_schema("x", "", schema, lambda **kw: kw)
    assert t.validate({"a": 1, "b": "s", "c": {"$ref": "data, not a reference"}}) == []


def test_business_validators_run_after_schema() -> None:
    def not_root(args: object) -> str | None:
        assert isinstance(args, dict)
        return "deleting / is not allowed" if args["path"] == "/" else None

    def raises(args: object) -> None:
        raise ValueError("path is on a read-only disk")

    @tool(validators=[not_root])
    def rm(path: str) -> None:
        pass

    assert rm.validate({"path": 3}) == [Violation("/path", "3 is not of type 'string'")]
    assert rm.validate({"path": "/"}) == [Violation("", "deleting / is not allowed")]
    assert rm.validate({"path": "/tmp"}) == []
    rm2 = tool(validators=[raises])(rm.fn)
    assert rm2.validate({"path": "/x"}) == [Violation("", "path is on a read-only disk")]


def _mk(name: str, permission: str = "read", doc: str = "Does things. More words.") -> Tool:
    def fn() -> None:
        pass

    return tool(name=name, permission=permission, description=doc)(fn)


def test_registry_register_get_contains_iter_names() -> None:
    reg = ToolRegistry()
    a = reg.register(_mk("a"))
    reg.register(_mk("b", "write"))
    assert reg.get("a") is a and reg.get("zzz") is None
    assert "a" in reg and "zzz" not in reg
    assert reg.names() == ["a", "b"] and [t.name for t in reg] == ["a", "b"]
    assert len(reg) == 2


def test_registry_register_plain_function_and_decorator_use() -> None:
    reg = ToolRegistry()

    @reg.register
    def ping() -> str:
        """Ping."""
        return "pong"

    assert isinstance(ping, Tool) and reg.get("ping") is ping


def test_duplicate_name_is_an_error_naming_it() -> None:
    reg = ToolRegistry([_mk("a")])
    with pytest.raises(ValueError, match="'a' is already registered"):
        reg.register(_mk("a"))


def test_unregister() -> None:
    reg = ToolRegistry([_mk("a"), _mk("b")])
    v = reg.version
    assert reg.unregister("a").name == "a"
    assert reg.names() == ["b"] and reg.version > v
    with pytest.raises(KeyError, match="registered: b"):
        reg.unregister("a")


def test_specs_filter_by_names_and_permission() -> None:
    reg = ToolRegistry([_mk("r"), _mk("w", "write"), _mk("x", "admin")])
    assert [s.name for s in reg.specs()] == ["r", "w", "x"]
    assert [s.name for s in reg.specs(max_permission=Permission.READ)] == ["r"]
    assert [s.name for s in reg.specs(max_permission=Permission.WRITE)] == ["r", "w"]
    assert [s.name for s in reg.specs(["x", "r", "nope"])] == ["r", "x"]
    assert [s.name for s in reg.specs(["x", "w"], Permission.WRITE)] == ["w"]
    first = reg.specs()
    first.clear()
    assert len(reg.specs()) == 3  # callers cannot corrupt the cache
    reg.register(_mk("late"))
    assert [s.name for s in reg.specs(max_permission=Permission.READ)] == ["r", "late"]


def test_summaries_are_one_line() -> None:
    reg = ToolRegistry([_mk("a", doc="Find files. Slowly.\nSecond line."), _mk("b", doc="")])
    assert reg.summaries() == ["a: Find files.", "b"]


def test_rewrapping_a_tool_with_new_flags() -> None:
    t = _mk("a")
    assert tool(t) is t
    t2 = tool(name="b", permission="write")(t)
    assert (t2.name, t2.spec.permission) == ("b", Permission.WRITE)
    assert t2.fn is t.fn
    assert len({t, t2}) == 2  # identity hashing

"""Email formats: ``email`` is ASCII (RFC 5321), ``idn-email`` any script (RFC 6531) but no
part mixing lookalike scripts; ``send_email`` refuses lookalike recipients."""

from __future__ import annotations

import pytest

from loopwright.core.emails import is_email, is_idn_email, lookalike
from loopwright.core.messages import ToolCallPart
from loopwright.tools import Dispatcher, ToolRegistry
from loopwright.tools.builtin.email import check_arguments
from loopwright.tools.decorator import Tool

CYRILLIC_A = "\u0430"


@pytest.mark.parametrize(
    ("address", "email", "idn"),
    [
        ("ana@example.com", True, True),
        ('"joe bloggs"@example.com', True, True),
        ("user@[127.0.0.1]", True, True),
        ("иван@пример.рф", False, True),  # legal IDN address, one script per part
        ("田中@例え.jp", False, True),
        ("tanaka太郎@example.jp", False, True),  # Latin with Han is one writing system
        (f"p{CYRILLIC_A}ypal@example.com", False, False),
        (f"ana@p{CYRILLIC_A}ypal.com", False, False),
        ("\uff41na@example.com", False, False),  # full-width a
        ("a@b@c.com", False, False),
        ("no-at-sign", False, False),
    ],
)
def test_email_and_idn_email(address: str, email: bool, idn: bool) -> None:
    assert is_email(address) is email
    assert is_idn_email(address) is idn


def test_a_lookalike_names_the_part_and_the_letter() -> None:
    why = lookalike(f"ana@p{CYRILLIC_A}ypal.com")
    assert why is not None and "LATIN and CYRILLIC" in why and "CYRILLIC SMALL LETTER A" in why


async def test_a_tool_declaring_the_format_refuses_the_lookalike_saying_why() -> None:
    raw = Tool.from_schema(
        "notify",
        "Notify.",
        {
            "type": "object",
            "properties": {"to": {"type": "string", "format": "idn-email"}},
            "required": ["to"],
        },
        lambda to: to,
    )
    d = Dispatcher(ToolRegistry([raw]))
    bad = await d.run_one(ToolCallPart("1", "notify", {"to": f"p{CYRILLIC_A}ypal@example.com"}))
    assert bad.result.error_kind == "invalid_arguments"
    assert "CYRILLIC SMALL LETTER A" in bad.result.content and "/to" in bad.result.content
    ok = await d.run_one(ToolCallPart("2", "notify", {"to": "иван@пример.рф"}))
    assert not ok.result.is_error and ok.result.content == "иван@пример.рф"


def test_send_email_refuses_a_lookalike_recipient_and_takes_an_idn_one() -> None:
    problem = check_arguments({"to": f"p{CYRILLIC_A}ypal@example.com", "subject": "s"})
    assert problem is not None and "lookalike" in problem and "CYRILLIC" in problem
    assert check_arguments({"to": "иван@пример.рф", "subject": "s"}) is None

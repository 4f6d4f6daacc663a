"""send_email: a hostile or damaged outbox cannot hang or break sends; the duplicate
check sees one recipient however the address is spaced or cased; header injection and
invisible characters are refused before anyone is asked to confirm."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from loopwright.core.errors import ToolError, ToolErrorKind
from loopwright.core.messages import ToolCallPart
from loopwright.tools import Confirmation, DispatchConfig, Dispatcher, ToolRegistry
from loopwright.tools.builtin import BuiltinConfig, make_send_email
from loopwright.tools.builtin.email import Outbox, email_key


def test_an_outbox_on_a_device_fails_fast_instead_of_reading_forever() -> None:
    done: list[object] = []

    def send() -> None:
        try:
            done.append(Outbox(Path("/dev/zero")).send("ana@example.com", "Hi", "x"))
        except ToolError as exc:
            done.append(exc)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    thread.join(5)
    assert not thread.is_alive(), "the outbox read never ended"
    assert isinstance(done[0], ToolError) and "not a regular file" in str(done[0])


def test_a_full_device_is_a_clear_error() -> None:
    with pytest.raises(ToolError, match="not a regular file"):
        Outbox(Path("/dev/full")).send("ana@example.com", "Hi", "x")


def test_one_damaged_line_does_not_break_later_sends(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"key": "x", "to": "caf\xe9"}\n\xff\xfe not json\n' + b"y" * 200_000 + b"\n")
    box = Outbox(path)
    assert box.send("ana@example.com", "Hi", "Body")["status"] == "queued"
    assert box.send("ana@example.com", "Hi", "Body")["status"] == "already_sent"
    assert [e["to"] for e in box.entries()] == ["ana@example.com"]


def test_address_case_and_spacing_do_not_defeat_the_duplicate_check(tmp_path: Path) -> None:
    args = {"subject": "Hi", "body": "Body"}
    assert email_key({"to": " Ana@Example.COM ", **args}) == email_key(
        {"to": "ana@example.com", **args}
    )
    box = Outbox(tmp_path / "o.jsonl")
    assert box.send("ana@example.com", "Hi", "Body")["status"] == "queued"
    again = box.send(
        " ANA@example.com", "Hi", "Body", email_key({"to": " ANA@example.com", **args})
    )
    assert again["status"] == "already_sent"


@pytest.mark.parametrize(
    ("to", "subject", "needle"),
    [
        ("ana@example.com", "Hi\r\nBcc: all@example.com", "one line"),
        ("ana@example.com", "Hi\nthere", "one line"),
        ("ana@exa\u202emoc.elpmaxe", "Hi", "U+202E"),
        ("\u2066ana@example.com", "Hi", "U+2066"),
        ("ana\u200b@example.com", "Hi", "U+200B"),
        ("ana@example.com\x07", "Hi", "U+0007"),
    ],
)
async def test_injection_and_invisible_characters_are_refused_before_confirmation(
    tmp_path: Path, to: str, subject: str, needle: str
) -> None:
    asked: list[str] = []
    send = make_send_email(BuiltinConfig(outbox=tmp_path / "o.jsonl"))

    def confirm(call: object, spec: object) -> Confirmation:
        asked.append("yes")
        return Confirmation.approve()

    d = Dispatcher(ToolRegistry([send]), DispatchConfig(confirm=confirm))
    call = ToolCallPart("c", "send_email", {"to": to, "subject": subject, "body": "b"})
    out = (await d.run_one(call)).result
    assert out.error_kind == ToolErrorKind.INVALID_ARGUMENTS.value
    assert needle in out.content
    assert asked == [] and not (tmp_path / "o.jsonl").exists()
    with pytest.raises(ToolError):
        Outbox(tmp_path / "direct.jsonl").send(to, subject, "b")

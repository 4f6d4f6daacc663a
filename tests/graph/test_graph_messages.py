"""add_messages: append, replace by id, remove, shorthand -- LangGraph's reducer over
loopwright Messages."""

from __future__ import annotations

import pytest

from loopwright.core import Message
from loopwright.graph import InvalidUpdateError, RemoveMessage, add_messages
from loopwright.graph.messages import message_id, with_id


def test_appends_and_gives_every_message_an_id() -> None:
    merged = add_messages([Message.user("a")], [Message.assistant("b")])
    assert [m.text for m in merged] == ["a", "b"]
    assert all(message_id(m) for m in merged)
    assert len({message_id(m) for m in merged}) == 2


def test_a_message_with_a_known_id_replaces_it_in_place() -> None:
    first = with_id(Message.user("draft"), "m1")
    second = with_id(Message.assistant("reply"), "m2")
    merged = add_messages([first, second], [with_id(Message.user("final"), "m1")])
    assert [m.text for m in merged] == ["final", "reply"]


def test_remove_message_deletes_by_id_and_unknown_ids_fail() -> None:
    keep, drop = with_id(Message.user("keep"), "k"), with_id(Message.user("drop"), "d")
    assert [m.text for m in add_messages([keep, drop], [RemoveMessage("d")])] == ["keep"]
    with pytest.raises(InvalidUpdateError, match="no message with id 'zz'"):
        add_messages([keep], [RemoveMessage("zz")])


def test_shorthand_forms_become_messages() -> None:
    merged = add_messages([], ["hi", ("ai", "hello"), {"role": "system", "content": "be brief"}])
    assert [(m.role, m.text) for m in merged] == [
        ("user", "hi"),
        ("assistant", "hello"),
        ("system", "be brief"),
    ]
    assert add_messages([], "single")[0].text == "single"
    with pytest.raises(InvalidUpdateError, match="cannot turn int into a message"):
        add_messages([], [42])
    with pytest.raises(InvalidUpdateError, match="unknown role 'robot'"):
        add_messages([], [("robot", "beep")])


def test_inputs_are_not_modified() -> None:
    left = [Message.user("a")]
    add_messages(left, [Message.user("b")])
    assert len(left) == 1 and message_id(left[0]) is None

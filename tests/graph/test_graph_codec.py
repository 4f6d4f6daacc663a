"""The checkpoint codec of graph state values: round trips, and stored rows that must
not be able to run code."""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass

import pytest
from graph_programs import Doc, Point

from loopwright.core import Message
from loopwright.graph import Interrupt, Send
from loopwright.graph.codec import TAG, CheckpointEncodeError, decode, encode


class Color(enum.Enum):
    RED = "red"


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, 2.5, None, True, "x"]},
        (1, (2, 3)),
        {1: "int key", (1, 2): "tuple key"},
        {TAG: "a dict that looks tagged"},
        {"s": {1, 2}, "f": frozenset({"a"})},
        Message.user("hi"),
        Point(1, 2),
        Doc(title="t", notes=[Point(3, 4)]),
        Color.RED,
        Send("node", {"x": Point(0, 0)}),
        Interrupt({"q": 1}, "id1"),
        b"\x00bytes",
        dt.datetime(2026, 1, 2, 3, 4, 5),
    ],
)
def test_values_round_trip(value: object) -> None:
    assert decode(encode(value)) == value


def test_unsupported_and_local_classes_are_refused_when_encoding() -> None:
    @dataclass
    class Local:
        x: int

    with pytest.raises(CheckpointEncodeError, match="defined inside a function"):
        encode(Local(1), "state key 'k'")
    with pytest.raises(CheckpointEncodeError, match=r"state key 'k'.*object"):
        encode(object(), "state key 'k'")


@pytest.mark.parametrize(
    "row",
    [
        {TAG: "dataclass", "cls": "subprocess:Popen", "v": {"args": "true"}},
        {TAG: "pydantic", "cls": "os:system", "v": {}},
        {TAG: "enum", "cls": "builtins:eval", "v": "1"},
        {TAG: "dataclass", "cls": "no_such_module_xyz:Thing", "v": {}},
        {TAG: "pickle", "cls": "x:y", "v": {}},
    ],
)
def test_a_stored_row_cannot_call_arbitrary_code(row: dict) -> None:
    with pytest.raises(CheckpointEncodeError):
        decode(row)

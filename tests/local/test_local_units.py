"""A number belongs to the numeric parameter that names the unit written after it
(``local_units``; no model needed)."""

from __future__ import annotations

from loopwright.core.tools import ToolSpec
from loopwright.providers import local_ground as lgr
from loopwright.providers.local_numbers import numbers_at
from loopwright.providers.local_units import unit_numbers


def _spec(props: dict[str, dict[str, object]], required: list[str]) -> ToolSpec:
    return ToolSpec("tool", "", {"type": "object", "properties": props, "required": required})


MOTION = {
    "speed": {"type": "integer", "description": "The starting speed in m/s."},
    "time": {"type": "integer", "description": "How long it moves, in seconds."},
    "acceleration": {"type": "number", "description": "In m/s^2.", "default": 0},
}


def test_a_required_number_is_the_one_written_with_its_unit() -> None:
    # Before: the enum held 12 and 4 and the model took the first (``"time": 12``).
    request = "A cart starts at a speed of 12 and speeds up by 2.5 for 4 seconds."
    schema = lgr.grounded_arguments(_spec(MOTION, ["speed", "time"]), lgr.Grounding(request))
    assert schema["properties"]["time"]["enum"] == [4]
    assert schema["properties"]["speed"]["enum"] == [12]


def test_an_optional_number_given_with_its_unit_is_required() -> None:
    # Nothing in ``radius_km``'s name is in the request; its unit is.
    props = {
        "city": {"type": "string", "description": "The city."},
        "radius_km": {"type": "integer", "description": "Search radius (in kilometers)."},
    }
    request = "Find bakeries within 3 kilometers of the centre of Lyon."
    schema = lgr.grounded_arguments(_spec(props, ["city"]), lgr.Grounding(request))
    assert schema["properties"]["radius_km"] == {"enum": [3]}
    assert "radius_km" in schema["required"]


def test_a_unit_two_parameters_name_or_two_numbers_share_decides_nothing() -> None:
    props = {
        "wait": {"type": "integer", "description": "Seconds to wait."},
        "timeout": {"type": "integer", "description": "Give up after this many seconds."},
    }
    request = "Wait 5 seconds."
    assert unit_numbers(props, request, numbers_at(request)) == {}
    request = "It moves for 4 seconds, then 6 seconds more."
    assert unit_numbers(MOTION, request, numbers_at(request)) == {}


def test_function_words_after_a_number_are_no_unit() -> None:
    props = {"count": {"type": "integer", "description": "How many, and of which kind."}}
    request = "Give me 3 and 4."
    assert unit_numbers(props, request, numbers_at(request)) == {}
    request = "a 10-mile run"
    miles = {"distance": {"type": "number", "description": "Distance in miles."}}
    assert unit_numbers(miles, request, numbers_at(request)) == {"distance": 10.0}


def test_a_number_outside_a_parameters_enum_or_type_is_not_its() -> None:
    """'Reservation and cleaning work 22/3/2024 Bangkok' held ``province_id`` (enum 1-5,
    "1 for Bangkok") to 2024, a call its own schema refuses."""
    props = {
        "province_id": {
            "type": "integer",
            "description": "ID of the province. Example: 1 for Bangkok, 2 for Chiang Mai.",
            "enum": [1, 2, 3, 4, 5],
        }
    }
    request = "Reservation and cleaning work 22/3/2024 Bangkok, Chatuchak"
    assert unit_numbers(props, request, numbers_at(request)) == {}
    assert unit_numbers(props, "3 Bangkok", numbers_at("3 Bangkok")) == {"province_id": 3}
    whole = {"count": {"type": "integer", "description": "How many apples"}}
    request = "buy 2.5 apples"
    assert unit_numbers(whole, request, numbers_at(request)) == {}

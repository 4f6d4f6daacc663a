"""Optional date and month parameters the request gives a value for (no model)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopwright.core.tools import ToolSpec
from loopwright.providers.local_dates import months_in
from loopwright.providers.local_ground import Grounding, grounded_arguments


def _spec(**optional: dict) -> ToolSpec:
    properties = {"location": {"type": "string"}, **optional}
    return ToolSpec(
        "rate",
        "Get a rate.",
        {"type": "object", "properties": properties, "required": ["location"]},
    )


DATE = {"type": "string", "description": "The date at which the rate applies. Default today."}
MONTH = {"type": "string", "description": "The month to compute for. Default January."}


@pytest.mark.parametrize(
    ("request_text", "key", "schema", "expected"),
    [
        ("Find the rate from Euro to Dollar at January 1, 2022", "date", DATE, ["2022-01-01"]),
        ("Solar potential in Toronto in December", "month", MONTH, ["December"]),
        ("Solar potential in Toronto from dec. to Feb", "month", MONTH, ["December", "February"]),
    ],
)
def test_an_optional_date_or_month_the_request_gives_is_required_and_held_to_it(
    request_text: str, key: str, schema: dict, expected: list[str]
) -> None:
    grounded = grounded_arguments(_spec(**{key: schema}), Grounding(request_text))
    assert grounded["properties"][key]["enum"] == expected
    assert key in grounded["required"]


@pytest.mark.parametrize(
    ("request_text", "key", "schema"),
    [
        ("Find the latest rate from Euro to Dollar", "date", DATE),  # no date given
        ("Solar potential in Toronto", "month", MONTH),
        ("I may go to Toronto", "month", MONTH),  # "may" the verb
        # the name says which date: the request must use that word
        ("Fly to Paris on January 3, 2024", "return_date", DATE),
    ],
)
def test_an_optional_date_or_month_the_request_does_not_give_is_left_out(
    request_text: str, key: str, schema: dict
) -> None:
    grounded = grounded_arguments(_spec(**{key: schema}), Grounding(request_text))
    assert key not in grounded["properties"]


def test_a_described_format_keeps_its_own_rule() -> None:
    schema = {"type": "string", "description": "The date, in the format 'DD/MM/YYYY'."}
    grounded = grounded_arguments(_spec(date=schema), Grounding("on January 3, 2024"))
    assert grounded["properties"]["date"]["enum"] == ["03/01/2024"]


_MONTHS = ["January", "February", "March", "April", "May", "June", "July"]


@given(st.lists(st.sampled_from(_MONTHS), min_size=1, max_size=4), st.sampled_from(["in", "by"]))
def test_months_named_in_full_are_found_in_order(months: list[str], word: str) -> None:
    text = " and ".join(f"{word} {m}" for m in months)
    assert months_in(text) == [m.lower() for m in dict.fromkeys(months)]

"""Approval bodies are read strictly: a call id sent where ``true`` or a list is expected
("1", "yes") is refused naming the field's shapes, never read as "approve every call"."""

from __future__ import annotations

import pytest

from loopwright.serve.errors import ApiError
from loopwright.serve.schemas import Approvals, parse


@pytest.mark.parametrize("approve", ["1", "yes", "true", 1, [1, 2]])
def test_approve_is_true_or_a_list_of_call_ids_nothing_else(approve: object) -> None:
    with pytest.raises(ApiError) as caught:
        parse(Approvals, {"approve": approve})
    err = caught.value
    assert err.status == 422 and err.field == "body.approve"
    assert "list of call ids" in err.fix and repr(approve)[:10] in err.message


def test_deny_names_its_shapes() -> None:
    with pytest.raises(ApiError) as caught:
        parse(Approvals, {"deny": 5})
    assert caught.value.field == "body.deny" and '{"call-2": "reason"}' in caught.value.fix


def test_valid_decisions_parse() -> None:
    assert parse(Approvals, {"approve": True}) == Approvals(approve=True)
    assert parse(Approvals, {"approve": ["1"], "deny": "no"}) == Approvals(approve=["1"], deny="no")

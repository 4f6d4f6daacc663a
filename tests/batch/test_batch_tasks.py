"""Reading a prompts file: prompts, ids, per-task limits, and the errors that name a line."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright.batch import make_tasks, read_tasks
from loopwright.batch.tasks import task_limits
from loopwright.core.errors import UserError
from loopwright.loop import Limits


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prompts.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def test_strings_objects_ids_and_limits(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        '"one"\n\n{"prompt": "two", "id": "b"}\n'
        '{"prompt": "three", "id": 7, "limits": {"max_turns": 2, "cost_budget": 0.5}}\n',
    )
    one, two, three = read_tasks(path)
    assert (one.index, one.prompt, one.id, one.key) == (0, "one", None, "#0")
    assert (two.index, two.key) == (1, "b")
    assert three.key == "7" and three.limits == (("max_turns", 2), ("cost_budget", 0.5))
    limits = task_limits(Limits(max_turns=9, timeout=4.0), three)
    assert (limits.max_turns, limits.cost_budget, limits.timeout) == (2, 0.5, 4.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('"ok"\nnot json\n', "prompts.jsonl:2: not JSON"),
        ('{"prompt": ""}\n', "prompts.jsonl:1: needs a non-empty text prompt"),
        ('{"prompt": "a", "id": [1]}\n', "'id' must be a string or an integer"),
        ('{"prompt": "a", "id": "x"}\n{"prompt": "b", "id": "x"}\n', "task id 'x' repeats"),
        ('{"prompt": "a", "limits": {"model_retries": 9}}\n', "limits.model_retries is not"),
        ('{"prompt": "a", "limits": {"max_turns": 0}}\n', "max_turns must be a positive"),
        ('{"prompt": "a", "limits": {"timeout": "soon"}}\n', "limits.timeout must be a number"),
        ('{"prompt": "a", "colour": "red"}\n', "unknown field(s) 'colour'"),
        ("\n\n", "no prompts in the file"),
    ],
)
def test_bad_lines_are_usage_errors_naming_the_line(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(UserError, match=None) as info:
        read_tasks(_file(tmp_path, text))
    assert message in str(info.value)


def test_an_id_may_not_collide_with_a_position_key() -> None:
    with pytest.raises(UserError, match="task id '#1' repeats"):
        make_tasks([{"prompt": "a", "id": "#1"}, "b"])

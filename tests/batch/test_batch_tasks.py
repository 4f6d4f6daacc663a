"""Reading a prompts file: prompts, ids, per-task limits, and the errors that name a line."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright.batch import make_tasks, read_tasks
from loopwright.batch.tasks import MAX_LISTED_ERRORS, task_limits
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
        ('"ok"\n{"prompt": "a", "id": ""}\n', "prompts.jsonl:2: 'id' is empty"),
        ('{"prompt": "a", "id": "  "}\n', "prompts.jsonl:1: 'id' is empty"),
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


def test_every_bad_line_is_listed_with_its_number_in_one_error(tmp_path: Path) -> None:
    # was: the first bad line ended the reading; fixing a file took one run per bad line
    path = _file(
        tmp_path,
        '"fine"\nnot json\n{"prompt": "a", "id": ""}\n\n{"prompt": ""}\n'
        '{"prompt": "b", "id": "x"}\n{"prompt": "c", "id": "x"}\n',
    )
    with pytest.raises(UserError) as info:
        read_tasks(path)
    lines = str(info.value).splitlines()
    assert lines[0] == f"{path}: 4 bad lines, nothing was run:"
    assert [line.split(": ", 1)[0].strip() for line in lines[1:]] == [
        f"{path}:{n}" for n in (2, 3, 5, 7)
    ]
    assert "not JSON" in lines[1] and "'id' is empty" in lines[2]
    assert "non-empty text prompt" in lines[3] and "repeats" in lines[4]


def test_a_long_list_of_bad_lines_is_cut_with_a_count(tmp_path: Path) -> None:
    path = _file(tmp_path, "nope\n" * (MAX_LISTED_ERRORS + 7))
    with pytest.raises(UserError) as info:
        read_tasks(path)
    lines = str(info.value).splitlines()
    assert lines[0].endswith(f"{MAX_LISTED_ERRORS + 7} bad lines, nothing was run:")
    assert len(lines) == 1 + MAX_LISTED_ERRORS + 1 and lines[-1] == "  ... and 7 more"


def test_python_prompts_list_every_bad_one_too() -> None:
    with pytest.raises(UserError) as info:
        make_tasks([{"prompt": "a", "id": ""}, "ok", {"prompt": 3}])
    message = str(info.value)
    assert "prompt 0: 'id' is empty" in message and "prompt 2: needs a non-empty" in message


def test_the_bad_lines_example_of_docs_batch_md(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    doc = (Path(__file__).resolve().parents[2] / "docs" / "batch.md").read_text("utf-8")
    shown = doc.split("```console\nprompts.jsonl: ", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    _file(tmp_path, '"a"\n"b"\n{"prompt": "c", "id": ""}\n"d"\n"e"\n"f"\nnot json\n')
    with pytest.raises(UserError) as info:
        read_tasks(Path("prompts.jsonl"))
    assert str(info.value) + "\n" == "prompts.jsonl: " + shown

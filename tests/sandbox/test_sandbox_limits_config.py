"""SandboxLimits refuses values the kernel limits cannot take, naming the field: a bad
one used to reach prlimit, which failed every run as if the program had."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright.tools.sandbox import SandboxConfig, SandboxLimits


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("memory_bytes", True),  # prlimit: failed to parse AS limit, on every run
        ("cpu_time", "5"),  # TypeError: '>' not supported between 'str' and 'int'
        ("max_processes", 1.5),
        ("max_open_files", float("nan")),
        ("wall_time", float("inf")),  # no wall clock at all
        ("wall_time", True),
        ("max_output_bytes", None),
    ],
)
def test_a_bad_limit_is_refused_naming_its_field(field: str, value: object) -> None:
    with pytest.raises(ValueError) as err:
        SandboxLimits(**{field: value})  # type: ignore[arg-type]
    assert f"SandboxLimits.{field}" in str(err.value)


def test_whole_numbers_and_a_fractional_wall_time_are_accepted() -> None:
    limits = SandboxLimits(wall_time=2.5, cpu_time=3, memory_bytes=2**28)
    assert (limits.wall_time, limits.cpu_time) == (2.5, 3)


def test_two_read_only_paths_with_one_name_are_refused(tmp_path: Path) -> None:
    # both were mounted at /input/data: the second hid the first without a word
    first, second = tmp_path / "a" / "data", tmp_path / "b" / "data"
    with pytest.raises(ValueError) as err:
        SandboxConfig(readonly=(first, second))
    assert "/input/data" in str(err.value)
    assert str(first) in str(err.value) and str(second) in str(err.value)

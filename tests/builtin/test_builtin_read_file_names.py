"""read_file with path names a model may write that are not what they look like."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright.core.errors import ToolError
from loopwright.tools.builtin.files import FileReader
from loopwright.tools.builtin.weather import get_weather


def test_a_file_whose_name_starts_with_a_tilde_is_read(tmp_path: Path) -> None:
    # "~notes.txt" was taken for the home directory of a user "notes.txt": RuntimeError
    (tmp_path / "~notes.txt").write_text("backup notes")
    assert FileReader(tmp_path).read("~notes.txt") == "backup notes"


def test_an_unknown_tilde_name_is_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ToolError) as err:
        FileReader(tmp_path).read("~nosuchuser/secrets.txt")
    assert err.value.kind.value == "not_found"


def test_the_home_directory_is_still_outside_the_root(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    with pytest.raises(ToolError) as err:
        FileReader(tmp_path / "root").read("~/notes.txt")
    assert "outside the allowed directory" in str(err.value)


def test_a_name_too_long_for_the_file_system_is_an_invalid_argument(tmp_path: Path) -> None:
    # was "permission_denied: cannot open (File name too long)": no permission is
    # missing, the path is what to change
    with pytest.raises(ToolError) as err:
        FileReader(tmp_path).read("a" * 300 + ".txt")
    assert err.value.kind.value == "invalid_arguments"
    assert "too long" in str(err.value)


def test_a_path_with_a_lone_surrogate_is_an_invalid_argument(tmp_path: Path) -> None:
    # JSON carries "\ud800" escapes; os.open raised UnicodeEncodeError (kind permanent)
    with pytest.raises(ToolError) as err:
        FileReader(tmp_path).read("\ud800.txt")
    assert err.value.kind.value == "invalid_arguments"
    assert "surrogate" in str(err.value)


def test_a_city_with_a_lone_surrogate_is_an_invalid_argument() -> None:
    with pytest.raises(ToolError) as err:
        get_weather("Par\ud800is")
    assert err.value.kind.value == "invalid_arguments"
    assert "city" in str(err.value)

"""read_file opens without a check-then-use gap: a directory swapped for a symlink while
reading never leaks an outside file, a FIFO never blocks, hard links are refused."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from loopwright.core.errors import ToolError, ToolErrorKind
from loopwright.tools.builtin.files import FileReader

ATTEMPTS = 6000


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    (root / "d" / "a.txt").write_text("inside", encoding="utf-8")
    (outside / "a.txt").write_text("SECRET", encoding="utf-8")
    return root, outside


def test_swapping_a_directory_for_a_symlink_never_leaks(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    reader = FileReader(root)
    stop = threading.Event()
    swaps = 0

    def swapper() -> None:
        # d flips between the real directory and a symlink to the outside, each state
        # lasting about one rename, so a lookup often straddles a flip
        nonlocal swaps
        real, parked, link = root / "d", root / "parked", root / "link"
        link.symlink_to(outside, target_is_directory=True)
        while not stop.is_set():
            os.rename(real, parked)
            os.rename(link, real)  # d -> outside
            os.rename(real, link)
            os.rename(parked, real)  # d is the real directory again
            swaps += 1

    thread = threading.Thread(target=swapper)
    thread.start()
    seen: dict[str, int] = {}
    try:
        for _ in range(ATTEMPTS):
            try:
                text = reader.read("d/a.txt")
            except ToolError as exc:
                text = exc.kind.value
            except Exception as exc:
                text = f"crash: {type(exc).__name__}"
            seen[text] = seen.get(text, 0) + 1
    finally:
        stop.set()
        thread.join()
    assert swaps > 50  # the race was really run
    assert "SECRET" not in seen, seen
    assert not [k for k in seen if k.startswith("crash")], seen
    assert "inside" in seen


def test_a_fifo_is_refused_without_blocking(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    os.mkfifo(root / "pipe")
    result: list[object] = []

    def read() -> None:
        try:
            result.append(FileReader(root).read("pipe"))
        except ToolError as exc:
            result.append(exc)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(5)
    assert not thread.is_alive(), "read_file blocked on a FIFO"
    assert isinstance(result[0], ToolError) and "regular file" in str(result[0])


def test_hard_links_to_outside_files_are_refused(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    os.link(outside / "a.txt", root / "hard.txt")
    with pytest.raises(ToolError, match="hard links"):
        FileReader(root).read("hard.txt")


def test_symlinks_that_stay_inside_the_root_still_work(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    (root / "alias").symlink_to("d", target_is_directory=True)
    (root / "abs.txt").symlink_to(root / "d" / "a.txt")
    (root / "d" / "up.txt").symlink_to("../d/a.txt")
    reader = FileReader(root)
    assert reader.read("alias/a.txt") == reader.read("abs.txt") == "inside"
    assert reader.read("d/up.txt") == "inside"
    (root / "d" / "out.txt").symlink_to("../../outside/a.txt")
    with pytest.raises(ToolError, match="outside"):
        reader.read("d/out.txt")
    (root / "loop").symlink_to("loop")
    with pytest.raises(ToolError) as err:
        reader.read("loop")
    assert err.value.kind is ToolErrorKind.PERMISSION_DENIED
    shutil.rmtree(outside)

"""PromptRegistry: versioned files, semantic latest, pins, canary, rollback, bad names."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from loopwright.prompts import PromptRegistry, RegistryError, Version, bucket, builtin_registry


def make(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


@pytest.fixture
def reg(tmp_path: Path) -> PromptRegistry:
    make(
        tmp_path,
        {
            "router/v1.0.txt": "one {x}",
            "router/v1.2.txt": "one-two {x}",
            "router/v1.10.txt": "one-ten {x}",
            "router/v1.9.1.txt": "one-nine-one {x}",
            "router/v2.0.0-rc.1.txt": "two-rc {x}",
            "router/changelog.md": "## 1.10\n- better\n",
            "router/schema.json": '{"type": "object"}',
            "planner/v1.0.txt": "plan {y}",
        },
    )
    return PromptRegistry(tmp_path)


def test_latest_is_semantic_not_string_order(reg: PromptRegistry) -> None:
    assert reg.versions("router") == ["1.0", "1.2", "1.9.1", "1.10", "2.0.0-rc.1"]
    assert reg.get("router").version == "1.10"  # release beats rc; 1.10 > 1.9.1 > 1.2
    assert reg.get("router", "v1.2").text == "one-two {x}"
    assert reg.get("router", "2.0.0-rc.1").text == "two-rc {x}"
    assert reg.changelog("router").startswith("## 1.10")
    assert reg.schema("router") == {"type": "object"} and reg.schema("planner") is None


def test_version_ordering() -> None:
    order = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-beta", "1.0.0-rc.1", "1.0.0", "1.2", "1.10"]
    assert sorted(order, key=Version.parse) == order
    assert Version.parse("1.0") == Version.parse("v1.0.0")


def test_unknown_name_and_version_list_what_exists(reg: PromptRegistry) -> None:
    with pytest.raises(RegistryError, match="known prompts: planner, router"):
        reg.get("routr")
    with pytest.raises(RegistryError, match=r"no version '3.0'; available: 1.0, 1.2"):
        reg.get("router", "3.0")
    with pytest.raises(RegistryError, match="malformed version 'one'"):
        reg.get("router", "one")


@pytest.mark.parametrize(
    "bad", ["v1.txt", "1.0.txt", "v1.0.0.0.txt", "v01.0.txt", "router-v1.0.txt"]
)
def test_malformed_version_file_is_a_precise_error(tmp_path: Path, bad: str) -> None:
    make(tmp_path, {"router/v1.0.txt": "a", f"router/{bad}": "b"})
    with pytest.raises(RegistryError) as info:
        PromptRegistry(tmp_path)
    assert f"router/{bad}" in str(info.value) and "v1.0.txt" in str(info.value)


def test_duplicate_version_spellings_are_rejected(tmp_path: Path) -> None:
    make(tmp_path, {"r/v1.0.txt": "a", "r/v1.0.0.txt": "b"})
    with pytest.raises(RegistryError, match=r"two files for version 1\.0\.0"):
        PromptRegistry(tmp_path)


def test_pin_canary_promote_rollback(reg: PromptRegistry) -> None:
    reg.pin("router", "1.2")
    assert reg.resolve("router", "anyone").version == "1.2"  # production ignores latest
    reg.start_canary("router", "1.10", 10)
    sessions = [f"session-{i}" for i in range(5000)]
    served = Counter(reg.resolve("router", s).version for s in sessions)
    assert 400 < served["1.10"] < 600  # ~10 %
    # stable: the same session always gets the same version
    assert all(
        reg.resolve("router", s).version == reg.resolve("router", s).version for s in sessions[:50]
    )
    assert reg.promote("router") == "1.10"
    assert reg.resolve("router", "x").version == "1.10"
    assert reg.rollback("router") == "1.2"
    assert reg.resolve("router", "x").version == "1.2"
    reg.start_canary("router", "2.0.0-rc.1", 50)
    assert reg.rollback("router") == "1.2"  # first stops the canary
    with pytest.raises(RegistryError, match="nothing to roll back"):
        reg.rollback("planner")
    with pytest.raises(RegistryError, match="percent"):
        reg.start_canary("router", "1.10", 0)


def test_bucketing_is_sha256_based_and_stable() -> None:
    assert bucket("router", "abc") == bucket("router", "abc")
    assert 0 <= bucket("router", "abc") < 100
    assert bucket("router", "abc") != bucket("planner", "abc")


def test_deployment_state_persists_across_processes(tmp_path: Path) -> None:
    make(tmp_path / "p", {"r/v1.0.txt": "a", "r/v1.1.txt": "b"})
    state = tmp_path / "deploy.json"
    PromptRegistry(tmp_path / "p", state_file=state).pin("r", "1.0")
    again = PromptRegistry(tmp_path / "p", state_file=state)
    assert again.pinned("r") == "1.0" and again.resolve("r").version == "1.0"


def test_builtin_registry_has_the_patterns_and_skips_local() -> None:
    reg = builtin_registry()
    assert reg.names() == ["executor", "planner", "reflector", "router", "scratchpad"]
    for name in reg.names():
        assert reg.schema(name) is not None and reg.changelog(name)


def test_canary_without_a_pin_serves_only_its_share(tmp_path: Path) -> None:
    make(tmp_path, {"router/v1.0.txt": "old {x}", "router/v1.1.txt": "new {x}"})
    reg = PromptRegistry(tmp_path, state_file=tmp_path / "deploy.json")
    reg.start_canary("router", "1.1", 10)  # the new file is also `latest`
    served = Counter(reg.resolve("router", f"session-{i}").version for i in range(1000))
    assert 50 < served["1.1"] < 150 and served["1.0"] == 1000 - served["1.1"]
    assert reg.pinned("router") == "1.0"  # the baseline is recorded for every process
    again = PromptRegistry(tmp_path, state_file=tmp_path / "deploy.json")
    assert (
        again.resolve("router", "session-1").version == reg.resolve("router", "session-1").version
    )
    assert reg.rollback("router") == "1.0"
    assert reg.resolve("router", "session-1").version == "1.0"


def test_canary_of_the_only_version_is_refused(tmp_path: Path) -> None:
    make(tmp_path, {"router/v1.0.txt": "only {x}"})
    with pytest.raises(RegistryError, match=r"no version besides '1\.0'"):
        PromptRegistry(tmp_path).start_canary("router", "1.0", 10)


def test_a_prompt_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "v1.0.txt").write_bytes("caf\xe9 {x}".encode("latin-1"))
    (tmp_path / "legacy" / "changelog.md").write_bytes(b"\xff\xfe")
    reg = PromptRegistry(tmp_path)
    with pytest.raises(RegistryError, match=r"legacy/v1\.0\.txt is not UTF-8"):
        reg.get("legacy")
    with pytest.raises(RegistryError, match=r"changelog\.md is not UTF-8"):
        reg.changelog("legacy")


def test_a_prompt_folder_without_version_files_is_named_with_the_layout(tmp_path: Path) -> None:
    """greet/1.0/template.txt was skipped silently: "known prompts: (none)" and nothing
    about the folder that is there."""
    (tmp_path / "greet" / "1.0").mkdir(parents=True)
    (tmp_path / "greet" / "1.0" / "template.txt").write_text("Hello {name}")
    registry = PromptRegistry(tmp_path)
    with pytest.raises(
        RegistryError, match=r"its folder greet/ holds no version file.*greet/v1\.0\.txt"
    ):
        registry.get("greet")
    with pytest.raises(RegistryError) as info:
        registry.get("other")  # no folder: no layout hint
    assert "holds no version file" not in str(info.value)

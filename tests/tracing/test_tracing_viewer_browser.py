"""The HTML trace viewer in a real headless Chromium (Debian's, driven by Playwright).

Playwright's own browser download is not reachable here: the test drives
``/usr/bin/chromium`` (installed by ``.ci/install-chromium.sh``) through
``executable_path``. Screenshots go to ``$LOOPWRIGHT_ARTIFACTS_DIR`` (default
``build/artifacts``) for CI to keep.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.tracing.samples import FINGERPRINT, large_trace, sample_trace, strategy_trace

from loopwright.tracing.spans import load_trace
from loopwright.tracing.viewer import render_html

playwright_sync = pytest.importorskip("playwright.sync_api")

CHROMIUM = os.environ.get("LOOPWRIGHT_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("LOOPWRIGHT_ARTIFACTS_DIR", "build/artifacts"))


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    # recorded before the browser starts: Playwright's sync API runs an event loop of
    # its own in this thread, and Agent.run refuses to start inside a running loop
    root = tmp_path_factory.mktemp("traces")
    return {
        "sample": sample_trace(root / "sample"),
        "large": large_trace(root / "large"),
        "strategy": strategy_trace(root / "strategy"),
    }


@pytest.fixture(scope="module")
def browser(traces: dict[str, Path]) -> Iterator[object]:
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        pytest.skip(f"no chromium at {CHROMIUM}: run .ci/install-chromium.sh")
    with playwright_sync.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        yield browser
        browser.close()


def _open(browser, html_path: Path):  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(html_path.resolve().as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=30_000)
    return page, requests, errors


def test_viewer_shows_calls_messages_totals_and_errors(browser, traces, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    trace = load_trace(traces["sample"])
    html = tmp_path / "run.html"
    html.write_text(render_html(trace), encoding="utf-8")
    page, requests, errors = _open(browser, html)

    # nothing but the file itself was loaded, and the script ran cleanly
    assert requests == [html.resolve().as_uri()]
    assert errors == []

    # totals
    total = lambda name: page.text_content(f"[data-total='{name}'] b")  # noqa: E731
    assert total("input_tokens") == "320"
    assert total("output_tokens") == "42"
    assert total("cost") == "$0.0030"
    assert total("model_calls") == "3"
    assert total("tool_calls") == "2"
    assert total("errors") == "2"
    assert page.text_content("#stop-reason") == "final_answer"
    assert FINGERPRINT in page.text_content("#prompts")

    # error marks: the rate-limited attempt and the failing tool, nothing else
    marks = page.locator(".row.error .mark").all_text_contents()
    assert sorted(marks) == ["✗ permanent", "✗ rate_limited"]
    assert page.locator(".row.error").count() == 2

    # expand the successful first model call: the messages sent and its reply
    chat = page.locator(".row.chat:not(.error)").first
    chat.click()
    details = page.locator(".details").first
    details.wait_for()
    text = details.inner_text()
    assert "What's the weather in Paris? Also explode." in text
    assert "→ get_weather(" in text and '"city":"Paris"' in text
    assert "attempt" in text and "120" in text
    assert chat.get_attribute("aria-expanded") == "true"

    # expand the tool calls: arguments and results
    page.locator(".row.tool", has_text="get_weather").click()
    args = page.locator(".details pre.args").first.inner_text()
    assert '"city": "Paris"' in args
    assert "sunny in Paris" in page.locator(".details pre.result").first.inner_text()
    page.locator(".row.tool", has_text="explode").click()
    failed = page.locator(".details pre.result.err").inner_text()
    assert "boom: disk" in failed
    assert "raw arguments" not in page.locator(".details").last.inner_text().lower()

    # the filter: errors only
    page.check("#only-errors")
    assert page.locator(".row:not(.hidden)").count() == 3  # the run + two errors
    page.uncheck("#only-errors")

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "trace-viewer.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    page.close()


def test_viewer_stays_responsive_with_10000_events(browser, traces, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    trace = load_trace(traces["large"])
    assert len(trace.events) >= 10_000
    html = tmp_path / "big.html"
    html.write_text(render_html(trace), encoding="utf-8")

    started = time.perf_counter()
    page, _, errors = _open(browser, html)
    loaded = time.perf_counter() - started
    assert errors == []
    assert page.locator(".row").count() == len(trace.spans)
    assert f"{len(trace.events)} events" in page.text_content("#meta")

    # expanding the last model call (its history holds the whole run) and filtering stay fast
    timing = page.evaluate(
        """() => {
            const rows = document.querySelectorAll('.row.chat');
            const t0 = performance.now();
            rows[rows.length - 1].click();
            const t1 = performance.now();
            const box = document.querySelector('.details');
            const input = document.getElementById('filter');
            input.value = 'chat';
            input.dispatchEvent(new Event('input'));
            const t2 = performance.now();
            return {expand: t1 - t0, filter: t2 - t1, messages: box.querySelectorAll('.msg').length};
        }"""
    )
    assert timing["messages"] == 21  # the last 20 messages sent, and the reply
    assert timing["expand"] < 500, timing
    assert timing["filter"] < 1000, timing
    assert loaded < 20, loaded
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "trace-viewer-10k.png"))
    page.close()


def test_viewer_shows_strategy_steps(browser, traces, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    html = tmp_path / "strategy.html"
    html.write_text(render_html(load_trace(traces["strategy"])), encoding="utf-8")
    page, _, errors = _open(browser, html)
    assert errors == []
    assert page.locator(".row.chat").count() == 2
    step = page.locator(".row.step")
    assert step.inner_text().startswith("◇self_consistency vote")
    step.click()
    detail = page.locator(".details").inner_text()
    assert "self_consistency" in detail and '"winner": "42"' in detail
    page.close()

"""A server that does not answer in time is a transient failure, retried before the first
event, for the three SDKs' own timeout machinery (httpx2 for anthropic and google-genai,
urllib3 for botocore)."""

from __future__ import annotations

import pytest
from contract import USER, collect, failed, fast_retry, request
from fakeserver import FakeServer, Reply
from kit_bedrock import MODEL_ID, OPTIONS

from loopwright.providers.anthropic import AnthropicModel, AnthropicOptions
from loopwright.providers.bedrock import BedrockModel, BedrockOptions
from loopwright.providers.gemini import GeminiModel, GeminiOptions

TIMEOUT = 0.3


def build(name: str, url: str, delays: list[float]):
    retry = fast_retry(delays, attempts=2)
    if name == "anthropic":
        return AnthropicModel(
            "claude-sonnet-5",
            base_url=url,
            api_key="k",
            retry=retry,
            options=AnthropicOptions(timeout=TIMEOUT),
        )
    if name == "gemini":
        return GeminiModel(
            "gemini-2.5-flash",
            base_url=url,
            api_key="k",
            retry=retry,
            options=GeminiOptions(timeout=TIMEOUT),
        )
    opts = BedrockOptions(
        region=OPTIONS.region,
        aws_access_key_id="AKIDTIMEOUT",
        aws_secret_access_key="secret",
        timeout=TIMEOUT,
    )
    return BedrockModel(MODEL_ID, base_url=url, retry=retry, options=opts)


@pytest.mark.parametrize("name", ["anthropic", "gemini", "bedrock"])
async def test_slow_server_is_transient_and_retried(name):
    delays: list[float] = []
    with FakeServer() as server:
        slow = Reply(200, {"content-type": "application/json"}, (b"{}",), delay=TIMEOUT * 3)
        server.push(slow, slow)
        err = failed(await collect(build(name, server.url, delays), request([USER])))
        assert err.error.kind == "transient", err.error
        assert len(delays) == 1, "one retry before giving up (attempts=2)"

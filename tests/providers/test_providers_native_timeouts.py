"""A server that does not answer in time is a transient failure (one request: the loop owns
retries), for the three SDKs' own timeout machinery (httpx2 for anthropic and google-genai,
urllib3 for botocore)."""

from __future__ import annotations

import pytest
from contract import USER, collect, failed, request
from fakeserver import FakeServer, Reply
from kit_bedrock import MODEL_ID, OPTIONS

from loopwright.providers.anthropic import AnthropicModel, AnthropicOptions
from loopwright.providers.bedrock import BedrockModel, BedrockOptions
from loopwright.providers.gemini import GeminiModel, GeminiOptions

TIMEOUT = 0.3


def build(name: str, url: str):
    if name == "anthropic":
        return AnthropicModel(
            "claude-sonnet-5",
            base_url=url,
            api_key="k",
            options=AnthropicOptions(timeout=TIMEOUT),
        )
    if name == "gemini":
        return GeminiModel(
            "gemini-2.5-flash",
            base_url=url,
            api_key="k",
            options=GeminiOptions(timeout=TIMEOUT),
        )
    opts = BedrockOptions(
        region=OPTIONS.region,
        aws_access_key_id="AKIDTIMEOUT",
        aws_secret_access_key="secret",
        timeout=TIMEOUT,
    )
    return BedrockModel(MODEL_ID, base_url=url, options=opts)


@pytest.mark.parametrize("name", ["anthropic", "gemini", "bedrock"])
async def test_slow_server_is_transient_and_not_retried(name):
    with FakeServer() as server:
        slow = Reply(200, {"content-type": "application/json"}, (b"{}",), delay=TIMEOUT * 3)
        server.push(slow, slow)
        err = failed(await collect(build(name, server.url), request([USER])))
        assert err.error.kind == "transient", err.error
        assert len(server.requests) == 1, "one request: the loop owns retries"

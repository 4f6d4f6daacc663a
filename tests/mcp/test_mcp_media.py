"""Images in tool results: MCP image content becomes a :class:`MediaPart` of the tool
result (with a line naming it in the text), sent as an image by the providers whose API
takes images in tool results and named by a note by the others (docs/mcp.md)."""

from __future__ import annotations

import base64
import json

import pytest
from mcp_helpers import node_bin

from loopwright import Agent, ScriptedModel, tool_call
from loopwright.core.messages import (
    MediaPart,
    Message,
    ToolCallPart,
    ToolResultPart,
    message_from_dict,
)
from loopwright.core.protocols import ModelRequest
from loopwright.core.tools import ToolOutput, ToolSpec
from loopwright.mcp import MCPServerConfig, MCPToolset, convert
from loopwright.providers.anthropic import encode_request as anthropic_request
from loopwright.providers.bedrock import encode_request as bedrock_request
from loopwright.providers.gemini import encode_request as gemini_request
from loopwright.providers.openai_chat import OpenAIChatModel
from loopwright.providers.openai_responses import OpenAIResponsesModel
from loopwright.tools import ToolRegistry, tool

mcp_types = pytest.importorskip("mcp_types")

PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 60).decode()
CALL = ToolCallPart("call-1", "snapshot", {})
RESULT = ToolResultPart(
    "call-1", "snapshot", "[image image/png, 68 bytes]", media=(MediaPart("image/png", PIXEL),)
)
HISTORY = [Message.user("look"), Message("assistant", (CALL,)), Message.tool_results([RESULT])]
SNAPSHOT = ToolSpec("snapshot", "Take a picture.", {"type": "object", "properties": {}})


def _result(*blocks: object) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=list(blocks))


def test_image_content_becomes_media_with_a_line_in_the_text() -> None:
    output = convert.result_output(
        _result(
            mcp_types.TextContent(type="text", text="here it is"),
            mcp_types.ImageContent(type="image", data=PIXEL, mime_type="image/png"),
        )
    )
    assert output.text == "here it is\n[image image/png, 68 bytes]"
    assert output.media == (MediaPart("image/png", PIXEL),)


def test_audio_odd_image_types_and_huge_images_stay_placeholders() -> None:
    huge = base64.b64encode(b"\x00" * (convert.MAX_IMAGE_BYTES + 1)).decode()
    output = convert.result_output(
        _result(
            mcp_types.AudioContent(type="audio", data=PIXEL, mime_type="audio/wav"),
            mcp_types.ImageContent(type="image", data=PIXEL, mime_type="image/x-icon"),
            mcp_types.ImageContent(type="image", data=huge, mime_type="image/png"),
            mcp_types.ImageContent(type="image", data="not base64!", mime_type="image/png"),
        )
    )
    assert output.media == ()
    assert output.text.count("not shown]") == 4
    assert output.text.endswith("[image image/png, not valid base64, not shown]")


def test_an_embedded_image_resource_is_media_and_a_text_resource_is_text() -> None:
    blob = mcp_types.BlobResourceContents(uri="file:///a.png", mime_type="image/png", blob=PIXEL)
    text = mcp_types.TextResourceContents(uri="file:///a.txt", mime_type="text/plain", text="hi")
    output = convert.result_output(
        _result(
            mcp_types.EmbeddedResource(type="resource", resource=blob),
            mcp_types.EmbeddedResource(type="resource", resource=text),
        )
    )
    assert (
        output.text == "[resource file:///a.png image/png, 68 bytes]\n[resource file:///a.txt]\nhi"
    )
    assert output.media == (MediaPart("image/png", PIXEL),)


def test_a_textual_blob_resource_is_shown_as_text() -> None:
    def blob(mime: str, data: bytes) -> object:
        contents = mcp_types.BlobResourceContents(
            uri="file:///x", mime_type=mime, blob=base64.b64encode(data).decode()
        )
        return mcp_types.EmbeddedResource(type="resource", resource=contents)

    output = convert.result_output(
        _result(
            blob("text/csv", b"a,b\n1,2"),
            blob("application/vnd.api+json", b'{"ok": true}'),
            blob("text/plain", b"\xff\xfe not utf-8"),
            blob("application/zip", b"PK"),
        )
    )
    assert output.text.split("\n") == [
        "[resource file:///x text/csv]",
        "a,b",
        "1,2",
        "[resource file:///x application/vnd.api+json]",
        '{"ok": true}',
        "[resource file:///x text/plain, 12 bytes, not shown]",
        "[resource file:///x application/zip, 2 bytes, not shown]",
    ]


def test_media_survives_the_message_codec() -> None:
    message = Message.tool_results([RESULT])
    assert message_from_dict(json.loads(json.dumps(message.to_dict()))) == message
    plain = Message.tool_results([ToolResultPart("c", "t", "x")])
    assert "media" not in json.dumps(plain.to_dict())  # old shape unchanged


def test_a_tool_returning_tool_output_gets_media_on_its_result() -> None:
    @tool
    def snapshot() -> ToolOutput:
        """Take a picture."""
        return ToolOutput("[image image/png, 68 bytes]", (MediaPart("image/png", PIXEL),))

    model = ScriptedModel([[tool_call("snapshot", {})], "a black square"])
    result = Agent(model, [snapshot]).run("look")
    [part] = result.messages[2].tool_results_parts
    assert part.media == (MediaPart("image/png", PIXEL),) and not part.is_error


def test_anthropic_sends_the_image_inside_the_tool_result() -> None:
    payload, _ = anthropic_request("m", ModelRequest(HISTORY, tools=[SNAPSHOT]))
    [block] = payload["messages"][2]["content"]
    assert block["content"] == [
        {"type": "text", "text": "[image image/png, 68 bytes]"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}},
    ]


def test_openai_responses_sends_the_image_as_an_input_image() -> None:
    body = OpenAIResponsesModel("m", api_key="k").encode(ModelRequest(HISTORY, tools=[SNAPSHOT]))[0]
    [output] = [i for i in body["input"] if i.get("type") == "function_call_output"]
    assert output["output"] == [
        {"type": "input_text", "text": "[image image/png, 68 bytes]"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PIXEL}"},
    ]


def test_apis_without_images_in_tool_results_get_a_note_instead() -> None:
    request = ModelRequest(HISTORY, tools=[SNAPSHOT])
    chat = OpenAIChatModel("m", api_key="k").encode(request)[0]
    gemini = gemini_request("g", request)[0]
    bedrock = bedrock_request("b", request)[0]
    texts = [
        chat["messages"][-1]["content"],
        gemini["contents"][-1]["parts"][0]["functionResponse"]["response"]["result"],
        bedrock["messages"][-1]["content"][0]["toolResult"]["content"][0]["text"],
    ]
    for text in texts:
        assert text.startswith("[image image/png, 68 bytes]\n")
        assert "the tool returned an image; this model API takes no images" in text
    assert PIXEL not in json.dumps([chat, gemini, bedrock])


def test_everything_servers_tiny_image_reaches_the_model_as_an_image() -> None:
    server = MCPServerConfig("everything", command=(node_bin("mcp-server-everything"),))
    with MCPToolset.connect([server]) as toolset:
        registry = toolset.attach(ToolRegistry())
        model = ScriptedModel([[tool_call("get-tiny-image", {})], "a tiny image"])
        result = Agent(model, registry).run("show me the tiny image")
    [part] = result.messages[2].tool_results_parts
    assert not part.is_error
    [media] = part.media
    assert media.mime_type == "image/png"
    assert base64.b64decode(media.data).startswith(b"\x89PNG")
    assert f"[image image/png, {len(base64.b64decode(media.data))} bytes]" in part.content
    # the model's next request carries it (and the server's other content types)
    last = model.requests[1].last_message
    assert last is not None
    sent = last.tool_results_parts[0]
    assert sent.media == part.media


def test_everything_servers_resources_and_annotated_image() -> None:
    server = MCPServerConfig("everything", command=(node_bin("mcp-server-everything"),))
    with MCPToolset.connect([server]) as toolset:
        registry = toolset.attach(ToolRegistry())
        blob = Agent(
            ScriptedModel([[tool_call("get-resource-reference", {"resourceType": "Blob"})], "ok"]),
            registry,
        ).run("blob")
        annotated = Agent(
            ScriptedModel(
                [
                    [
                        tool_call(
                            "get-annotated-message",
                            {"messageType": "success", "includeImage": True},
                        )
                    ],
                    "ok",
                ]
            ),
            registry,
        ).run("annotated")
    [resource] = blob.messages[2].tool_results_parts
    # a text/plain blob resource: its text, not a placeholder
    assert "[resource demo://resource/dynamic/blob/1 text/plain]\n" in resource.content
    assert "not shown" not in resource.content and resource.media == ()
    [message] = annotated.messages[2].tool_results_parts
    assert "Operation completed successfully" in message.content
    assert [m.mime_type for m in message.media] == ["image/png"]


async def test_loopwrights_server_sends_a_tools_images_as_image_content() -> None:
    from loopwright.mcp.server import build_server
    from mcp import Client

    @tool
    def snapshot() -> ToolOutput:
        """Take a picture."""
        return ToolOutput("a picture", (MediaPart("image/png", PIXEL),))

    async with Client(build_server(ToolRegistry([snapshot]))) as client:
        result = await client.call_tool("snapshot", {})
    assert not result.is_error
    text, image = result.content
    assert isinstance(text, mcp_types.TextContent) and text.text == "a picture"
    assert isinstance(image, mcp_types.ImageContent)
    assert (image.mime_type, image.data) == ("image/png", PIXEL)

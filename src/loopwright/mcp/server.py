"""Serve a loopwright tool registry over MCP (stdio or streamable HTTP).

Every call goes through loopwright's own :class:`~loopwright.tools.Dispatcher`, so what
protects a tool inside an agent protects it here: arguments are validated against the
tool's schema (the 2.x low-level SDK server does not validate them), permissions are
checked on every call (not only when listing), timeouts, retries of idempotent tools and
result truncation apply, and failures come back as ``is_error`` results with the
machine-readable kind in front (``invalid_arguments: ...``).

Tools above the server's permission level are neither listed nor callable. Tools that
need confirmation are handled by ``confirm``:

* ``"hide"`` (the default): they are not exposed at all (a client cannot be assumed to
  put a person in the loop);
* ``"elicit"``: they are listed, and each call first asks the client through MCP
  elicitation; only an explicit approval runs it; a decline, a cancel, or a client that
  cannot elicit means the call is not run.

See ``docs/mcp.md``.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Literal

from loopwright.core.messages import ToolCallPart
from loopwright.core.tools import Permission, ToolSpec
from loopwright.tools import Confirmation, DispatchConfig, Dispatcher, ToolRegistry

if TYPE_CHECKING:
    from mcp.server import MCPServer

ConfirmMode = Literal["hide", "elicit"]
_call_ids = itertools.count(1)


def build_server(
    registry: ToolRegistry,
    *,
    name: str = "loopwright",
    permission: Permission | str = Permission.READ,
    confirm: ConfirmMode = "hide",
    dispatch: DispatchConfig | None = None,
) -> MCPServer:
    """An MCP server (``mcp.server.MCPServer``) exposing ``registry``'s tools.

    ``permission`` is the highest level a client may use. ``dispatch`` configures the
    dispatcher (its ``permission`` and ``confirm`` are replaced by the two arguments)."""
    from dataclasses import replace

    from mcp.server import MCPServer

    level = Permission.parse(permission)
    if confirm not in ("hide", "elicit"):
        raise ValueError(f"confirm must be 'hide' or 'elicit', got {confirm!r}")
    config = replace(dispatch or DispatchConfig(), permission=level, confirm=_never_asked)
    dispatcher = Dispatcher(registry, config)

    class RegistryServer(MCPServer):  # type: ignore[type-arg]
        """``MCPServer`` whose tools are the registry's, run by the dispatcher."""

        async def list_tools(self) -> list[Any]:
            return [_mcp_tool(spec) for spec in _exposed(registry, level, confirm)]

        def _tool_input_schema(self, tool: str) -> dict[str, Any] | None:
            spec = _find(registry, level, confirm, tool)
            return None if spec is None else dict(spec.parameters)

        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            return await _call(dispatcher, registry, (level, confirm), name, arguments, context)

    return RegistryServer(name, instructions=f"Tools of a loopwright registry ({len(registry)}).")


def _exposed(registry: ToolRegistry, level: Permission, confirm: ConfirmMode) -> list[ToolSpec]:
    return [
        spec
        for spec in registry.specs(max_permission=level)
        if confirm == "elicit" or not spec.requires_confirmation
    ]


def _find(
    registry: ToolRegistry, level: Permission, confirm: ConfirmMode, name: str
) -> ToolSpec | None:
    return next((s for s in _exposed(registry, level, confirm) if s.name == name), None)


async def _call(
    dispatcher: Dispatcher,
    registry: ToolRegistry,
    policy: tuple[Permission, ConfirmMode],
    name: str,
    arguments: dict[str, Any],
    context: Any,
) -> Any:
    import mcp_types

    level, confirm = policy
    spec = _find(registry, level, confirm, name)
    if spec is None:
        # a hidden tool is reported exactly like a missing one: its existence is not leaked
        from mcp import MCPError

        raise MCPError(mcp_types.INVALID_PARAMS, f"Unknown tool: {name}")
    call = ToolCallPart(f"mcp-{next(_call_ids)}", name, arguments)
    decision: Confirmation | None = None
    if spec.requires_confirmation:
        asked = await _ask(context, call, spec)
        if not isinstance(asked, Confirmation):
            return asked  # an InputRequiredResult: the client answers, then calls again
        decision = asked
    result = (await dispatcher.run_one(call, confirmation=decision)).result
    content: list[Any] = [mcp_types.TextContent(type="text", text=result.content)]
    content += [  # a tool's images (docs/mcp.md) go out as MCP image content
        mcp_types.ImageContent(type="image", data=m.data, mime_type=m.mime_type)
        for m in result.media
    ]
    return mcp_types.CallToolResult(content=content, is_error=result.is_error)


_CONFIRM_KEY = "loopwright/confirm"
_APPROVAL_SCHEMA = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "description": "Run this call?"}},
    "required": ["approve"],
}


async def _ask(context: Any, call: ToolCallPart, spec: ToolSpec) -> Any:
    """Ask the client whether ``call`` may run: a :class:`Confirmation`, or (on a
    2026-07-28 session, first round) the ``InputRequiredResult`` carrying the question.

    Older sessions are asked with a server-to-client ``elicitation/create`` request;
    newer ones get the question embedded in the result and send the answer along when
    they retry the call (the protocol's multi-round-trip form of elicitation)."""
    import json

    import mcp_types
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if context is None:
        return Confirmation.deny("no MCP client to ask for confirmation")
    args = json.dumps(dict(call.arguments), ensure_ascii=False)
    message = f"Allow {call.name}({args})? {spec.summary}"
    responses = context.input_responses or {}
    if _CONFIRM_KEY in responses:
        answer = responses[_CONFIRM_KEY]
        return _decision(getattr(answer, "action", None), getattr(answer, "content", None))
    capabilities = context.client_capabilities
    if capabilities is None or capabilities.elicitation is None:
        return Confirmation.deny("the MCP client cannot be asked (no elicitation support)")
    if context.protocol_version in MODERN_PROTOCOL_VERSIONS:
        params = mcp_types.ElicitRequestFormParams(
            message=message, requested_schema=_APPROVAL_SCHEMA
        )
        return mcp_types.InputRequiredResult(
            input_requests={_CONFIRM_KEY: mcp_types.ElicitRequest(params=params)}
        )
    try:
        result = await context.request_context.session.elicit_form(
            message=message,
            requested_schema=_APPROVAL_SCHEMA,
            related_request_id=context.request_id,
        )
    except Exception as exc:
        return Confirmation.deny(f"the client could not be asked ({type(exc).__name__})")
    return _decision(result.action, result.content)


def _decision(action: object, content: object) -> Confirmation:
    if action == "accept" and isinstance(content, dict) and content.get("approve") is True:
        return Confirmation.approve("approved by the MCP client")
    return Confirmation.deny(f"the MCP client answered {action or 'nothing'}")


def _never_asked(call: ToolCallPart, spec: ToolSpec) -> Confirmation:
    # confirmation is decided in _call before dispatch; reaching the handler means a
    # decision was skipped, so refuse rather than run
    return Confirmation.deny("confirmation was not obtained")


def _mcp_tool(spec: ToolSpec) -> Any:
    import mcp_types

    # Only what the spec knows: loopwright has no "read-only" flag (READ is a permission
    # level, not a promise of no side effects), so read_only_hint stays unset.
    return mcp_types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=dict(spec.parameters),
        annotations=mcp_types.ToolAnnotations(
            destructive_hint=True if spec.requires_confirmation else None,
            idempotent_hint=spec.idempotent,
        ),
    )

"""The one versioned codec for :class:`~loopwright.core.run.RunState`.

A checkpoint is stored as a *header* (every field except the message history, plus
``schema_version`` and ``message_count``) and the history as one JSON document per
message. Stores append the new messages of each checkpoint instead of rewriting the
history, so a checkpoint's write cost does not grow with the conversation.

Versions
--------
* ``0`` -- an early external layout (``turn_count``, ``message_history`` of
  OpenAI-style ``{"role", "content"}`` dicts, ``total_input_tokens`` ...). Loaded through
  :func:`migrate`; never written.
* ``1`` -- had ``goal``/``plan``/``completed_steps`` fields (moved into ``metadata``).
* ``2`` -- the current layout (:data:`~loopwright.store.state.SCHEMA_VERSION`).

A header from a *newer* version fails with :class:`SchemaVersionError` naming both
versions; a malformed header or message raises :class:`CorruptCheckpoint` naming the
session and the row.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, overload

from loopwright.core.messages import (
    CodecError,
    JSONValue,
    Message,
    ToolCallPart,
    ToolResultPart,
    Usage,
    message_from_dict,
    part_from_dict,
    part_to_dict,
)
from loopwright.core.run import (
    ERROR_LOG_SIZE,
    TAINT_LOG_SIZE,
    ErrorRecord,
    LoopState,
    RunState,
    RunStop,
    TaintSource,
)
from loopwright.core.text import to_json
from loopwright.store.errors import CorruptCheckpoint, HistoryConflict, SchemaVersionError
from loopwright.store.state import SCHEMA_VERSION, Encoded, IntentRecord, IntentStatus

_P = TypeVar("_P", ToolCallPart, ToolResultPart)


def _dumps(value: object) -> str:
    # Through the runtime's one JSON writer: a lone surrogate in model or tool text
    # becomes U+FFFD instead of failing the row's UTF-8 encoding and the checkpoint.
    return to_json(value, strict=False)


# --------------------------------------------------------------------------- encode
def encode_message(message: Message) -> str:
    return _dumps(message.to_dict())


def encode_header(state: RunState) -> str:
    """Every field of ``state`` except ``messages`` (their count is kept)."""
    return _header(state, _dumps(state.session_id), _dumps(state.usage.to_dict()))


def _header_fields(state: RunState) -> dict[str, Any]:
    """The header as a dict: what :func:`encode_header` writes, field for field (the
    layout's reference; ``tests/store/test_store_codec.py`` pins that the two agree)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "session_id": state.session_id,
        "status": state.status.value,
        "turn": state.turn,
        "message_count": len(state.messages),
        "usage": state.usage.to_dict(),
        "consecutive_errors": state.consecutive_errors,
        "error_log": _error_dicts(state),
        "pending_calls": [part_to_dict(c) for c in state.pending_calls],
        "held_results": [part_to_dict(r) for r in state.held_results],
        "steering": [m.to_dict() for m in state.steering],
        "follow_ups": [m.to_dict() for m in state.follow_ups],
        "stop": None if state.stop is None else state.stop.value,
        "detail": state.detail,
        "parent": state.parent,
        "metadata": dict(state.metadata),
        "created_at": state.created_at,
        "updated_at": state.updated_at,
        "taint": _taint_dicts(state),
        "output_retries_used": state.output_retries_used,
    }


def _error_dicts(state: RunState) -> list[dict[str, Any]]:
    return [
        {"turn": e.turn, "source": e.source, "kind": e.kind, "message": e.message}
        for e in state.error_log
    ]


def _taint_dicts(state: RunState) -> list[dict[str, Any]]:
    return [{"tool": t.tool, "call_id": t.call_id, "excerpt": t.excerpt} for t in state.taint]


def _header(state: RunState, session: str, usage: str) -> str:
    """:func:`encode_header`'s text, put together from the JSON of each field instead of
    encoding one dict: a checkpoint of a running agent mostly has empty queues and logs,
    which cost nothing here, and ``session``/``usage`` (the JSON of the session id and of
    the usage) can be kept by a writer that encodes many checkpoints of one run
    (:class:`StateEncoder`). Same text as encoding :func:`_header_fields` whole.
    Measured: 35 -> 12 us per header, 6.5 us through a run's encoder
    (``benchmarks/notes/durable.md``)."""
    return (
        f'{{"schema_version":{SCHEMA_VERSION},"session_id":{session},'
        f'"status":{_STATUS[state.status]},"turn":{_num(state.turn)},'
        f'"message_count":{len(state.messages)},"usage":{usage},'
        f'"consecutive_errors":{_num(state.consecutive_errors)},'
        f'"error_log":{_list(state.error_log, _error_dicts, state)},'
        f'"pending_calls":{_parts(state.pending_calls)},'
        f'"held_results":{_parts(state.held_results)},'
        f'"steering":{_messages(state.steering)},"follow_ups":{_messages(state.follow_ups)},'
        f'"stop":{"null" if state.stop is None else _STOP[state.stop]},'
        f'"detail":{_dumps(state.detail) if state.detail else _EMPTY_TEXT},'
        f'"parent":{"null" if state.parent is None else _dumps(state.parent)},'
        f'"metadata":{_dumps(dict(state.metadata)) if state.metadata else "{}"},'
        f'"created_at":{_num(state.created_at)},"updated_at":{_num(state.updated_at)},'
        f'"taint":{_list(state.taint, _taint_dicts, state)},'
        f'"output_retries_used":{_num(state.output_retries_used)}}}'
    )


_STATUS = {s: _dumps(s.value) for s in LoopState}
_STOP = {s: _dumps(s.value) for s in RunStop}
_EMPTY_TEXT = _dumps("")


def _num(value: object) -> str:
    """``value`` as the JSON encoder writes it (``int``/``float`` by their ``repr``)."""
    kind = type(value)
    if kind is int:
        return int.__repr__(value)  # type: ignore[arg-type]
    if kind is float and math.isfinite(value):  # type: ignore[arg-type]
        return float.__repr__(value)  # type: ignore[arg-type]
    return _dumps(value)


def _list(
    items: Sequence[object], dicts: Callable[[RunState], list[dict[str, Any]]], state: RunState
) -> str:
    return _dumps(dicts(state)) if items else "[]"


def _parts(parts: Sequence[ToolCallPart | ToolResultPart]) -> str:
    return _dumps([part_to_dict(p) for p in parts]) if parts else "[]"


def _messages(messages: Sequence[Message]) -> str:
    return _dumps([m.to_dict() for m in messages]) if messages else "[]"


class StateEncoder:
    """Encodes the checkpoints of ONE run's live state (:meth:`encode`), each message
    once: a message already encoded for an earlier checkpoint of the run keeps its row
    (messages are immutable values; a row is kept with the message object it encodes and
    reused only for that same object), and the header's per-run parts (the session id,
    an unchanged usage) are encoded once. Scoped to the run: it holds the rows of that
    run's messages only, and is dropped with the run (``durable.Checkpointer``)."""

    __slots__ = ("_messages", "_rows", "_session", "_usage")

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._rows: list[str] = []
        self._session: tuple[str, str] = ("", "")
        self._usage: tuple[Usage | None, str] = (None, "")

    def encode(self, state: RunState) -> Encoded:
        """``state`` (a snapshot: it must not change until its write returns) encoded."""
        messages, known = state.messages, self._messages
        k = len(known)
        # every kept row checked against its message (a pointer comparison each, like
        # the snapshot's copy of the list): a history rewritten anywhere is re-encoded
        # from its first changed message, whatever the caller assumes about it
        if len(messages) < k or not all(map(operator.is_, known, messages)):
            k = _same_prefix(known, messages)
            # new lists: a write still in flight keeps reading the rows it was given
            self._messages = known = known[:k]
            self._rows = self._rows[:k]
        rows = self._rows
        for m in messages[k:]:
            known.append(m)
            rows.append(encode_message(m))
        sid, sid_json = self._session
        if sid is not state.session_id:
            sid_json = _dumps(state.session_id)
            self._session = (state.session_id, sid_json)
        usage, usage_json = self._usage
        if usage is not state.usage:
            usage_json = _dumps(state.usage.to_dict())
            self._usage = (state.usage, usage_json)
        return Encoded(_header(state, sid_json, usage_json), rows)


def _same_prefix(a: Sequence[Message], b: Sequence[Message]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x is not y:
            return i
    return min(len(a), len(b))


class _LazyRows(Sequence[str]):
    """The rows of ``messages``, each encoded when read (a store reads only the rows it
    appends and the one before)."""

    __slots__ = ("_messages",)

    def __init__(self, messages: Sequence[Message]) -> None:
        self._messages = messages

    def __len__(self) -> int:
        return len(self._messages)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return [encode_message(m) for m in self._messages[index]]
        return encode_message(self._messages[index])


def encoded(state: RunState, given: Encoded | None) -> Encoded:
    """What a store writes for a checkpoint of ``state``: ``given`` (the writer encoded it
    already, ``Write.encoded``), else ``state`` encoded here (rows as they are read)."""
    if given is not None:
        return given
    return Encoded(encode_header(state), _LazyRows(state.messages))


def encode_state(state: RunState) -> str:
    """The whole state as one JSON document (header fields plus ``messages``)."""
    header = _header_fields(state)
    header["messages"] = [m.to_dict() for m in state.messages]
    return _dumps(header)


def encode_result(result: ToolResultPart) -> str:
    return _dumps(part_to_dict(result))


def encode_intent(intent: IntentRecord) -> str:
    return _dumps(
        {
            "session_id": intent.session_id,
            "call_id": intent.call_id,
            "tool": intent.tool,
            "idempotency_key": intent.idempotency_key,
            "arguments": dict(intent.arguments),
            "status": intent.status.value,
            "result": None if intent.result is None else part_to_dict(intent.result),
            "created_at": intent.created_at,
            "updated_at": intent.updated_at,
        }
    )


def check_continues(sid: str, index: int, row: Sequence[Any] | None, expected: str) -> None:
    """Raise :class:`HistoryConflict` unless stored message ``index`` (the one the save
    appends after; ``row``: its stored row) is ``expected``, the writer's row for its
    message ``index``: a writer that did not see another writer's save must not append
    after it (its own messages would be dropped as "already stored"). One indexed row
    read per save, whatever the history length."""
    stored = row[0] if row is not None else None
    if isinstance(stored, bytes):
        stored = stored.decode("utf-8", "replace")
    if stored != expected:
        raise HistoryConflict(sid, index)


# --------------------------------------------------------------------------- decode
def _loads(raw: str | bytes | Mapping[str, Any], session_id: str, where: str) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptCheckpoint(session_id, where, f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CorruptCheckpoint(
            session_id, where, f"expected a JSON object, got {type(data).__name__}"
        )
    return data


def decode_message(raw: str | bytes, session_id: str, index: int) -> Message:
    data = _loads(raw, session_id, f"message {index}")
    try:
        return message_from_dict(data)
    except CodecError as exc:
        raise CorruptCheckpoint(session_id, f"message {index}", str(exc)) from None


def _decode_messages(rows: Sequence[str | bytes], session_id: str) -> tuple[Message, ...]:
    """One ``json.loads`` over all rows (much faster than one per row); on any failure,
    row by row, so the error names the first bad row."""
    try:
        texts = [r.decode() if isinstance(r, bytes) else r for r in rows]
        data = json.loads("[" + ",".join(texts) + "]")
        if len(data) == len(texts):
            return tuple(message_from_dict(d) for d in data)
    except (ValueError, UnicodeDecodeError, CodecError, TypeError):
        pass
    return tuple(decode_message(r, session_id, i) for i, r in enumerate(rows))


def decode_state(
    header: str | bytes | Mapping[str, Any],
    messages: Sequence[str | bytes],
    *,
    session_id: str,
    checkpoint: int | None = None,
) -> RunState:
    """Rebuild a state from a stored header and its message rows.

    ``messages`` may be longer than the header's ``message_count`` (rows appended by later
    checkpoints): only the first ``message_count`` are used. Older schema versions are
    migrated first; a header with inline ``messages`` (version 0, or a full export from
    :func:`encode_state`) uses those instead of ``messages``.
    """
    where = "header" if checkpoint is None else f"checkpoint {checkpoint} header"
    data = migrate(_loads(header, session_id, where), session_id)
    try:
        count = int(data.get("message_count", len(messages)))
        if "messages" in data:
            history = tuple(message_from_dict(m) for m in data["messages"])
        else:
            if len(messages) < count:
                raise CorruptCheckpoint(
                    session_id, where, f"expects {count} messages, only {len(messages)} stored"
                )
            history = _decode_messages(messages[:count], session_id)
        return _state_from_header(data, history)
    except CorruptCheckpoint:
        raise
    except (CodecError, KeyError, TypeError, ValueError) as exc:
        raise CorruptCheckpoint(session_id, where, f"{type(exc).__name__}: {exc}") from None


_RETIRED_STATUS = {"reflect": "observe"}
"""Statuses older versions stored that this one has no state for: ``reflect`` was entered
between ACT and THINK; a run resumed from it continues from OBSERVE anyway."""


def _state_from_header(data: Mapping[str, Any], history: tuple[Message, ...]) -> RunState:
    stop = data.get("stop")
    status = data.get("status", LoopState.OBSERVE.value)
    return RunState(
        session_id=str(data["session_id"]),
        status=LoopState(_RETIRED_STATUS.get(status, status)),
        turn=int(data.get("turn", 0)),
        messages=list(history),
        usage=Usage.from_dict(data.get("usage") or {}),
        consecutive_errors=int(data.get("consecutive_errors", 0)),
        error_log=tuple(_error_log(data.get("error_log", ()))),
        pending_calls=tuple(_typed(p, ToolCallPart) for p in data.get("pending_calls", ())),
        held_results=tuple(_typed(p, ToolResultPart) for p in data.get("held_results", ())),
        steering=tuple(message_from_dict(m) for m in data.get("steering", ())),
        follow_ups=tuple(message_from_dict(m) for m in data.get("follow_ups", ())),
        stop=None if stop is None else RunStop(stop),
        detail=str(data.get("detail", "")),
        parent=data.get("parent"),
        metadata=dict(data.get("metadata") or {}),
        created_at=float(data["created_at"]),
        updated_at=float(data["updated_at"]),
        taint=_taint(data.get("taint") or ()),
        # absent in headers written before it existed: nothing re-asked yet
        output_retries_used=int(data.get("output_retries_used", 0)),
    )


def _error_log(entries: Sequence[Mapping[str, Any]]) -> list[ErrorRecord]:
    records = []
    for e in entries[-ERROR_LOG_SIZE:]:
        try:
            records.append(
                ErrorRecord(int(e["turn"]), str(e["source"]), str(e["kind"]), str(e["message"]))
            )
        except (KeyError, TypeError, ValueError):
            continue  # an error-log entry is diagnostic only; a malformed one is dropped
    return records


def _taint(entries: Sequence[Mapping[str, Any]]) -> tuple[TaintSource, ...]:
    # Unlike the error log, a malformed entry is not dropped: the taint gates side
    # effects, so a damaged record still marks the state (with what can be read of it).
    return tuple(
        TaintSource(str(e.get("tool", "?")), str(e.get("call_id", "?")), str(e.get("excerpt", "")))
        if isinstance(e, Mapping)
        else TaintSource("?", "?", str(e))
        for e in entries[-TAINT_LOG_SIZE:]
    )


def _typed(data: Mapping[str, Any], cls: type[_P]) -> _P:
    part = part_from_dict(data)
    if not isinstance(part, cls):
        raise ValueError(f"expected a {cls.__name__}, got a {part.kind} part")
    return part


def decode_result(raw: str | bytes, where: str) -> ToolResultPart:
    data = _loads(raw, "-", where)
    try:
        return _typed(data, ToolResultPart)
    except (CodecError, ValueError) as exc:
        raise CorruptCheckpoint("-", where, str(exc)) from None


def decode_intent(raw: str | bytes, session_id: str) -> IntentRecord:
    data = _loads(raw, session_id, "intent record")
    try:
        result = data.get("result")
        return IntentRecord(
            session_id=str(data["session_id"]),
            call_id=str(data["call_id"]),
            tool=str(data["tool"]),
            idempotency_key=data.get("idempotency_key"),
            arguments=dict(data.get("arguments") or {}),
            status=IntentStatus(data["status"]),
            result=None if result is None else _typed(result, ToolResultPart),
            created_at=float(data["created_at"]),
            updated_at=float(data["updated_at"]),
        )
    except (CodecError, KeyError, TypeError, ValueError) as exc:
        raise CorruptCheckpoint(
            session_id, "intent record", f"{type(exc).__name__}: {exc}"
        ) from None


# --------------------------------------------------------------------------- migrations
def _v0_message(item: Mapping[str, Any]) -> dict[str, JSONValue]:
    """An OpenAI-chat-style dict (a plain ``message_history`` list) as a v1 message dict."""
    role = item.get("role", "user")
    content = item.get("content") or ""
    if role == "tool":
        return {
            "role": "tool",
            "parts": [
                {
                    "kind": "tool_result",
                    "call_id": str(item.get("tool_call_id", "")),
                    "name": str(item.get("name", "")),
                    "content": str(content),
                }
            ],
        }
    parts: list[dict[str, JSONValue]] = [{"kind": "text", "text": str(content)}] if content else []
    for call in item.get("tool_calls") or ():
        fn = call.get("function", {})
        raw = fn.get("arguments", "{}")
        try:
            args = json.loads(raw) if isinstance(raw, str) else dict(raw)
        except ValueError:
            args = {}
        parts.append(
            {
                "kind": "tool_call",
                "id": str(call.get("id", "")),
                "name": str(fn.get("name", "")),
                "arguments": args if isinstance(args, dict) else {},
                "raw_arguments": raw if isinstance(raw, str) else json.dumps(raw),
            }
        )
    return {"role": role, "parts": parts}


def _migrate_0_to_1(data: dict[str, Any]) -> dict[str, Any]:
    status = str(data.get("status", "observe")).lower().rsplit(".", 1)[-1]
    plan = data.get("current_plan") or []
    return {
        "schema_version": 1,
        "session_id": data["session_id"],
        "status": status if status in LoopState.__members__.values() else "observe",
        "turn": int(data.get("turn_count", 0)),
        "messages": [_v0_message(m) for m in data.get("message_history", ())],
        "usage": {
            "input_tokens": int(data.get("total_input_tokens", 0)),
            "output_tokens": int(data.get("total_output_tokens", 0)),
        },
        "goal": str(data.get("task_goal", "")),
        "plan": list(plan),
        "completed_steps": list(data.get("completed_steps", ())),
        "consecutive_errors": int(data.get("consecutive_errors", 0)),
        "error_log": list(data.get("error_log", ())),
        "created_at": float(data.get("created_at", 0.0)),
        "updated_at": float(data.get("updated_at", 0.0)),
    }


def _migrate_1_to_2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 had ``goal``, ``plan`` and ``completed_steps`` fields that nothing in the
    runtime wrote; a non-empty one moves into ``metadata`` so no stored data is lost."""
    data = dict(data)
    metadata = dict(data.get("metadata") or {})
    for name in ("goal", "plan", "completed_steps"):
        value = data.pop(name, None)
        if value:
            metadata.setdefault(name, value)
    data["metadata"] = metadata
    data["schema_version"] = 2
    return data


MIGRATIONS: Mapping[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    0: _migrate_0_to_1,
    1: _migrate_1_to_2,
}
"""``MIGRATIONS[v]`` turns a version-``v`` header into a version ``v + 1`` header."""


def migrate(data: dict[str, Any], session_id: str) -> dict[str, Any]:
    """Bring a header up to :data:`SCHEMA_VERSION` (a header without a version is v0)."""
    version = data.get("schema_version", 0)
    if not isinstance(version, int) or version < 0:
        raise CorruptCheckpoint(session_id, "header", f"bad schema_version {version!r}")
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"session {session_id!r} was saved with checkpoint schema version {version}, "
            f"but this loopwright reads versions 0..{SCHEMA_VERSION}; upgrade loopwright "
            "to load it (the stored data was not modified)"
        )
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise SchemaVersionError(
                f"session {session_id!r}: no migration from checkpoint schema version "
                f"{version} to {version + 1}; this state cannot be loaded"
            )
        try:
            data = step(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptCheckpoint(
                session_id, "header", f"cannot migrate from schema version {version}: {exc}"
            ) from None
        version = int(data["schema_version"])
    return data

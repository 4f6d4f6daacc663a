"""``CompiledStateGraph``: run a compiled graph, stream it, and read or edit its threads.

Built by :meth:`StateGraph.compile`. Runs happen in :mod:`loopwright.graph.pregel`;
their chunks reach a stream's consumer through :mod:`loopwright.graph.streaming`;
checkpoints go through :mod:`loopwright.graph.checkpoint`, and a thread's snapshots and
updates are read and written by :mod:`loopwright.graph.snapshots`; the diagram is drawn
by :mod:`loopwright.graph.draw`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from loopwright.graph.checkpoint import GraphSaver
from loopwright.graph.messages import add_messages
from loopwright.graph.pregel import Next, _Run
from loopwright.graph.run_sync import no_running_loop, run_sync
from loopwright.graph.schema import schema_kind
from loopwright.graph.snapshots import snapshot_of, update, where, with_subgraphs
from loopwright.graph.streaming import Feed, FromSubgraph, SubgraphEmit
from loopwright.graph.task import Task
from loopwright.graph.thread_lock import thread_held
from loopwright.graph.types import (
    END,
    INTERRUPT_KEY,
    START,
    Command,
    GraphError,
    InvalidUpdateError,
    ParentCommand,
    Send,
    StateSnapshot,
    checkpoint_number,
    refuse_options,
)

if TYPE_CHECKING:
    from loopwright.graph.builder import BranchSpec, StateGraph

DEFAULT_RECURSION_LIMIT = 10007
"""LangGraph 1.2's default ``recursion_limit``."""
Config = Mapping[str, Any]
StreamMode = str | Sequence[str]
_MODES = ("values", "updates", "events", "custom")


class CompiledStateGraph:
    """A validated graph, ready to run. See ``docs/graph.md``."""

    def __init__(
        self,
        builder: StateGraph,
        checkpointer: Any,
        name: str,
        interrupts: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset()),
    ) -> None:
        self.builder = builder
        self.interrupt_before, self.interrupt_after = interrupts
        self.name = name
        self.schema = builder.schema
        keys = list(self.schema.keys)
        reducers = dict(self.schema.reducers)
        initial = dict(self.schema.initial)
        for extra in builder.extra_keys.values():
            for key in extra.keys:
                if key not in keys:
                    keys.append(key)
                    if key in extra.reducers:
                        reducers[key] = extra.reducers[key]
                    if key in extra.initial:
                        initial[key] = extra.initial[key]
        self.keys = frozenset(keys)
        self.output_keys = (builder.output_schema or self.schema).keys
        self._input_keys = frozenset((builder.input_schema or self.schema).keys) | (
            frozenset(keys) if builder.input_schema is None else frozenset()
        )
        self.reducers = reducers
        self.initial = initial
        self.message_keys = frozenset(k for k, r in reducers.items() if r is add_messages)
        self.nodes = dict(builder.nodes)
        self.edges: dict[str, tuple[str, ...]] = {}
        for start, end in builder.edges:
            if end != END and end not in self.edges.get(start, ()):
                self.edges[start] = (*self.edges.get(start, ()), end)
        self.joins: dict[str, tuple[frozenset[str], str]] = {}
        self.joins_from: dict[str, tuple[str, ...]] = {}
        for starts, end in builder.waiting_edges:
            if end == END:
                continue
            key = f"join:{'+'.join(starts)}:{end}"
            self.joins[key] = (frozenset(starts), end)
            for start in starts:
                self.joins_from[start] = (*self.joins_from.get(start, ()), key)
        self.branches: dict[str, tuple[BranchSpec, ...]] = {
            k: tuple(v) for k, v in builder.branches.items()
        }
        self.checkpointer = checkpointer
        self.saver = GraphSaver(checkpointer, reducers) if checkpointer is not None else None
        self._nested_saver: GraphSaver | None = None
        self.recursion_limit = DEFAULT_RECURSION_LIMIT

    # ------------------------------------------------------------------ running
    async def ainvoke(
        self, input: Any, config: Config | None = None, **options: Any
    ) -> dict[str, Any]:
        """Run until the graph ends or is interrupted; return the state (with
        ``"__interrupt__": [Interrupt, ...]`` when a node is waiting for an answer)."""
        durability = _durability(options.pop("durability", None))
        refuse_options("invoke", options, harmless=("stream_mode",))
        run = _Run(self, config or {})
        run.write_behind = durability == "async"
        values = await run.run(input)
        out = self.output(values)
        if run.interrupts:
            out[INTERRUPT_KEY] = list(run.interrupts)
        return out

    def invoke(self, input: Any, config: Config | None = None, **kwargs: Any) -> dict[str, Any]:
        """Synchronous :meth:`ainvoke`."""
        return run_sync(self.ainvoke(input, config, **kwargs))

    async def astream(
        self,
        input: Any,
        config: Config | None = None,
        *,
        stream_mode: StreamMode = "updates",
        subgraphs: bool = False,
        **options: Any,
    ) -> AsyncIterator[Any]:
        """Yield chunks as the graph runs.

        ``stream_mode``: ``"updates"`` (``{node: update}`` per finished task, in the
        order tasks finish), ``"values"`` (the whole state after each superstep),
        ``"events"`` (:data:`~loopwright.graph.types.GraphEvent` values, including the
        run events of agent nodes), ``"custom"`` (what nodes send through
        :func:`get_stream_writer`), or a list of them (chunks become ``(mode, chunk)``).

        ``subgraphs=True`` also streams the chunks of subgraph runs, each prefixed with
        its namespace: ``(namespace, chunk)`` or ``(namespace, mode, chunk)``, where
        the namespace is ``()`` for this graph and ``("node:task", ...)`` down to the
        subgraph run that produced the chunk.
        """
        durability = _durability(options.pop("durability", None))
        refuse_options("stream", options)
        if not isinstance(stream_mode, str | list | tuple):
            raise GraphError(
                f"stream_mode must be a mode name or a list of them ({', '.join(_MODES)}), "
                f"got {stream_mode!r}"
            )
        modes = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
        for mode in modes:
            if mode not in _MODES:
                raise GraphError(f"unknown stream_mode {mode!r}; use one of {', '.join(_MODES)}")
        feed = Feed()
        run = _Run(self, config or {}, feed.put, frozenset(modes), drain=feed.drained)
        run.write_behind = durability == "async"
        if subgraphs:
            run.subgraph_feed = feed.put
        task = asyncio.ensure_future(run.run(input))
        task.add_done_callback(feed.finished)
        multi = not isinstance(stream_mode, str)
        try:
            while True:
                item = await feed.get()
                if item is None:
                    break
                mode, chunk = item
                path: tuple[str, ...] = ()
                graph = self
                if type(chunk) is FromSubgraph:
                    path, graph, chunk = chunk.path, chunk.graph, chunk.chunk
                if mode == "values":
                    chunk = graph._values_chunk(chunk)
                if subgraphs:
                    yield (path, mode, chunk) if multi else (path, chunk)
                else:
                    yield (mode, chunk) if multi else chunk
            await task
        finally:
            if not task.done():  # the consumer stopped early: stop the run, let it unwind
                if run.thread_lock is not None:
                    run.thread_lock.closing = True  # a new run of the thread may wait for it
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    def stream(
        self,
        input: Any,
        config: Config | None = None,
        *,
        stream_mode: StreamMode = "updates",
        **kw: Any,
    ) -> Iterator[Any]:
        """Synchronous :meth:`astream`."""
        no_running_loop("stream", "astream")
        loop = asyncio.new_event_loop()
        agen = cast(
            AsyncGenerator[Any, None], self.astream(input, config, stream_mode=stream_mode, **kw)
        )
        try:
            while True:
                try:
                    item = loop.run_until_complete(agen.__anext__())
                except StopAsyncIteration:
                    return
                yield item
        finally:
            loop.run_until_complete(agen.aclose())
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    async def run_nested(
        self, input: Mapping[str, Any], config: Config, task: Task
    ) -> dict[str, Any]:
        """Run as a subgraph node inside ``task`` of a parent graph. With a checkpointer
        on the parent, the run checkpoints in the parent's store under its own
        namespace (:meth:`_Run.namespace`), so an interrupt or a failure inside it
        resumes there without running its finished nodes again; interrupts and
        ``Command.PARENT`` propagate to the parent."""
        parent = task.run
        configurable = {
            **(config.get("configurable") or {}),
            "thread_id": parent.namespace(task),
            "checkpoint_id": None,  # the parent's checkpoint id means nothing here
        }
        config = {**config, "configurable": configurable}
        feed = parent.subgraph_feed
        if feed is None:
            run = _Run(self, config, parent=task)
        else:  # stream(..., subgraphs=True): this run's chunks go out with its namespace
            path = (*parent.namespace_path, f"{task.name}:{task.id}")
            run = _Run(self, config, SubgraphEmit(feed, path, self), parent.modes, parent=task)
            run.namespace_path = path
            run.subgraph_feed = feed
        run.write_behind = parent.write_behind
        state = {k: v for k, v in input.items() if k in self.keys}
        return self.output(await run.run(state))

    def nested_saver(self, parent: GraphSaver | None) -> GraphSaver | None:
        """The saver of this graph's runs as a subgraph: the parent's store, this
        graph's reducers (``None`` when the parent keeps no checkpoints)."""
        if parent is None:
            return None
        saver = self._nested_saver
        if saver is None or saver.store is not parent.store:
            saver = self._nested_saver = GraphSaver(parent.store, self.reducers)
        return saver

    # ------------------------------------------------------------------ node outputs
    def input_writes(self, input: Any) -> list[tuple[str, Any]]:
        if isinstance(input, Mapping):
            keys = self._input_keys
            return [(k, v) for k, v in input.items() if k in keys]
        if schema_kind(type(input)) is not None:
            return [(k, v) for k, v in self.schema.object_updates(input) if k in self.keys]
        raise InvalidUpdateError(f"Expected dict, got {input!r} as the graph's input")

    def output_writes(self, node: str, out: Any) -> tuple[list[tuple[str, Any]], list[str | Send]]:
        """A node's return value as state writes and Command gotos."""
        if out is None:
            return [], []
        if isinstance(out, dict):
            keys = self.keys
            return [(k, v) for k, v in out.items() if k in keys], []
        if isinstance(out, Command):
            return self._command(out, node)
        if isinstance(out, (list, tuple)) and any(isinstance(o, Command) for o in out):
            writes: list[tuple[str, Any]] = []
            gotos: list[str | Send] = []
            for item in out:
                w, g = self.output_writes(node, item)
                writes += w
                gotos += g
            return writes, gotos
        if schema_kind(type(out)) is not None:
            return [(k, v) for k, v in self.schema.object_updates(out) if k in self.keys], []
        if inspect.isawaitable(out):
            if inspect.iscoroutine(out):
                out.close()  # never awaited: closed, so no "never awaited" warning follows
            raise InvalidUpdateError(
                f"node {node!r} returned {out!r:.60}, which is awaited only when the node "
                "itself is an `async def` function: declare it `async def` and await inside"
            )
        raise InvalidUpdateError(
            f"Expected dict, got {out!r} (node {node!r} must return a dict of state updates, "
            "a Command, a state object or None)"
        )

    def filter_writes(self, items: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
        return [(k, v) for k, v in items if k in self.keys]

    def _command(
        self, command: Command[Any], node: str
    ) -> tuple[list[tuple[str, Any]], list[str | Send]]:
        if command.graph == Command.PARENT:
            raise ParentCommand(command)
        where = f"node {node!r}"
        update = command.update
        if update is not None and schema_kind(type(update)) is not None:
            writes = self.schema.object_updates(update)
        else:
            writes = command.update_items(where)
        gotos = command.goto_targets(where)
        for goto in gotos:
            if isinstance(goto, Send) and goto.node == END:
                raise InvalidUpdateError("Cannot send a packet to the END node")
            if isinstance(goto, Send) and goto.node not in self.nodes:
                raise InvalidUpdateError(
                    f"{where} sent Send({goto.node!r}, ...) to an unknown node; nodes: "
                    f"{', '.join(self.nodes)}"
                )
        return self.filter_writes(writes), gotos

    def check_node(self, name: str) -> None:
        if name not in self.nodes:
            raise InvalidUpdateError(
                f"unknown node {name!r} as a destination; nodes: {', '.join(self.nodes)}"
            )

    async def follow_branch(
        self,
        branch: BranchSpec,
        source: str,
        values: Mapping[str, Any],
        config: Config,
        chosen: Next,
    ) -> None:
        """Call a conditional edge on ``values`` and schedule what it returns."""
        spec = self.nodes.get(source)
        view = (spec.input if spec is not None and spec.input else self.schema).coerce(values)
        result = branch.path(view, config=config) if branch.takes_config else branch.path(view)
        if branch.is_async:
            result = await result
        items = result if isinstance(result, (list, tuple)) else [result]
        for item in items:
            if not isinstance(item, str | Send) and (
                branch.path_map is None or not _hashable(item) or item not in branch.path_map
            ):
                raise InvalidUpdateError(
                    f"conditional edge {branch.name!r} from {source!r} returned {item!r:.60}: "
                    "return a node name (or END), a list of them, or Send objects -- or give "
                    "add_conditional_edges a path_map for what it returns"
                )
            if isinstance(item, Send):
                if item.node == END:
                    raise InvalidUpdateError("Cannot send a packet to the END node")
                self.check_node(item.node)
                chosen.pushes.append(item)
                continue
            dest = item
            if branch.path_map is not None:
                if item not in branch.path_map:
                    raise InvalidUpdateError(
                        f"conditional edge {branch.name!r} from {source!r} returned {item!r}, "
                        f"which its path map does not have (keys: {list(branch.path_map)})"
                    )
                dest = branch.path_map[item]
            if dest is None or dest == START:
                raise InvalidUpdateError(
                    f"conditional edge {branch.name!r} from {source!r} returned {item!r}, which "
                    "is no node name: return a node name (or END), a list of them, or Sends"
                )
            if dest != END:
                self.check_node(dest)
                chosen.pulls[dest] = None

    def output(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return {k: values[k] for k in self.output_keys if k in values}

    def _values_chunk(self, chunk: Mapping[str, Any]) -> dict[str, Any]:
        out = self.output(chunk)
        if INTERRUPT_KEY in chunk:
            out[INTERRUPT_KEY] = chunk[INTERRUPT_KEY]
        return out

    # ------------------------------------------------------------------ threads
    def get_state(self, config: Config, *, subgraphs: bool = False) -> StateSnapshot:
        """The thread's current state (or the checkpoint ``checkpoint_id`` names): values,
        the nodes that run next, and the tasks of an unfinished superstep (their errors,
        interrupts, and the updates of tasks that finished). With ``subgraphs``, a
        pending subgraph task that has started carries the subgraph's own snapshot in
        its ``state`` (nested subgraphs too), as in LangGraph."""
        graph, saver, thread, checkpoint_id, ns = where(self, config)
        saved = (
            saver.at(thread, checkpoint_number(thread, checkpoint_id))
            if checkpoint_id
            else saver.latest(thread)
        )
        if saved is None:
            return StateSnapshot({}, (), dict(config), None, None, None)
        snapshot = snapshot_of(graph, thread, saved, apply_pending=checkpoint_id is None, ns=ns)
        if subgraphs:
            snapshot = with_subgraphs(graph, snapshot, saver, thread, saved.number, ns)
        return snapshot

    async def aget_state(self, config: Config, *, subgraphs: bool = False) -> StateSnapshot:
        """:meth:`get_state` from async code (a blocking store is read on a thread)."""
        return await self._off_loop(lambda: self.get_state(config, subgraphs=subgraphs))

    async def aget_state_history(
        self, config: Config, *, limit: int | None = None
    ) -> AsyncIterator[StateSnapshot]:
        """:meth:`get_state_history` from async code."""
        snapshots = await self._off_loop(lambda: list(self.get_state_history(config, limit=limit)))
        for snapshot in snapshots:
            yield snapshot

    async def aupdate_state(
        self, config: Config, values: Any, as_node: str | None = None
    ) -> dict[str, Any]:
        """:meth:`update_state` from async code."""
        return await self._off_loop(self.update_state, config, values, as_node)

    async def _off_loop(self, fn: Any, *args: Any) -> Any:
        if self.saver is not None and self.saver.store.blocking:
            return await asyncio.to_thread(fn, *args)
        return fn(*args)

    def get_state_history(
        self, config: Config, *, limit: int | None = None, **_: Any
    ) -> Iterator[StateSnapshot]:
        """Every checkpoint of the thread, newest first (of a subgraph's namespace when
        ``config`` is a subgraph snapshot's, from ``get_state(config, subgraphs=True)``)."""
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise GraphError(
                "get_state_history(limit=...) must be a whole number >= 0 (or None: every "
                f"checkpoint), got {limit!r}"
            )
        graph, saver, thread, _checkpoint, ns = where(self, config)
        for n, saved in enumerate(saver.history(thread)):
            if limit is not None and n >= limit:
                return
            yield snapshot_of(graph, thread, saved, apply_pending=False, ns=ns)

    def update_state(
        self, config: Config, values: Any, as_node: str | None = None
    ) -> dict[str, Any]:
        """Write ``values`` into the thread as a new checkpoint (a fork when ``config``
        names an earlier ``checkpoint_id``), through the reducers. With ``as_node`` the
        update counts as that node's output: its edges choose the next nodes; otherwise
        the pending nodes stay pending (on an empty thread the update acts as the input:
        START's edges choose). Returns the new checkpoint's config. A subgraph snapshot's
        config (``get_state(config, subgraphs=True)``) updates that subgraph run, which
        the parent's next resume continues from."""
        graph, saver, thread, checkpoint_id, ns = where(self, config)
        top = thread[: -len(ns) - 1] if ns else thread  # a subgraph's runs hold the top thread
        with thread_held(saver.store, top):
            return update(graph, saver, thread, checkpoint_id, ns, values, as_node)

    # ------------------------------------------------------------------ drawing
    def get_graph(self, **_: Any) -> Any:
        """A drawable view: ``graph.get_graph().draw_mermaid()``."""
        from loopwright.graph.draw import DrawableGraph

        return DrawableGraph.of(self.builder)

    def draw_mermaid(self) -> str:
        return str(self.get_graph().draw_mermaid())


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _durability(value: object) -> str:
    """LangGraph's ``durability``: ``"async"`` (default: a checkpoint is written while
    the next superstep runs, settled before returning) or ``"sync"`` (written before the
    next superstep starts). ``"exit"`` is not supported."""
    if value is None:
        return "async"
    if value in ("async", "sync"):
        return str(value)
    raise GraphError(f"durability={value!r} is not supported; use 'async' (default) or 'sync'")

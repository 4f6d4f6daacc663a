"""``StateGraph``: build a graph of nodes over a shared state, then ``compile`` it.

See ``docs/graph.md``. The builder only records; :meth:`StateGraph.compile` validates
the whole graph and returns the runnable :class:`~loopwright.graph.engine.CompiledStateGraph`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from loopwright.graph.schema import Schema, parse_schema, schema_kind
from loopwright.graph.types import (
    END,
    START,
    Command,
    GraphBuildError,
    RetryPolicy,
    refuse_options,
)
from loopwright.tools.execution import SyncProfile

NodeFn = Callable[..., Any]
_RESERVED_CHARS = ("|", ":")


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node: its callable, how it is called, and where it may route by Command."""

    name: str
    fn: NodeFn
    is_async: bool
    takes_config: bool
    input: Schema | None
    """The node's own input schema when it differs from the state's."""
    ends: tuple[str, ...] | None
    """Declared ``Command`` destinations (``-> Command[Literal[...]]`` or
    ``destinations=``); ``None`` when the node may go anywhere (``-> Command``)."""
    subgraph: Any = None
    """The compiled graph when this node is a subgraph."""
    retry: tuple[RetryPolicy, ...] = ()
    """Retry policies: the first whose ``retry_on`` matches a failure applies."""
    inline: bool | None = None
    """Where a plain ``def`` node runs, as a sync tool's ``inline``: ``None`` on worker
    threads until its own runs prove it short and non-blocking, then on the event loop;
    ``False`` always on a worker; ``True`` always on the loop (docs/graph.md)."""
    profile: SyncProfile = field(init=False, compare=False, repr=False)
    """What the node's worker runs taught about it (used when ``inline`` is ``None``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "profile", SyncProfile(self.name))


@dataclass(frozen=True, slots=True)
class BranchSpec:
    """A conditional edge: ``path(state)`` picks the next node(s)."""

    source: str
    path: Callable[..., Any]
    path_map: Mapping[Hashable, str] | None
    is_async: bool
    takes_config: bool
    name: str


class StateGraph:
    """A graph whose nodes read a shared state and return partial updates to it.

    ``StateGraph(State)`` where ``State`` is a ``TypedDict``, dataclass or pydantic
    model; keys annotated ``Annotated[T, reducer]`` are merged with the reducer, others
    are overwritten. Build with :meth:`add_node`, :meth:`add_edge`,
    :meth:`add_conditional_edges`, :meth:`add_sequence`, then :meth:`compile`.
    """

    def __init__(
        self,
        state_schema: type,
        context_schema: type | None = None,
        *,
        input_schema: type | None = None,
        output_schema: type | None = None,
        **options: Any,
    ) -> None:
        refuse_options("StateGraph", {"context_schema": context_schema, **options})
        self.state_schema = state_schema
        self.schema = parse_schema(state_schema)
        self.extra_keys: dict[str, Schema] = {}
        self.input_schema = parse_schema(input_schema) if input_schema is not None else None
        self.output_schema = parse_schema(output_schema) if output_schema is not None else None
        for extra in (self.input_schema, self.output_schema):
            if extra is not None:
                self.extra_keys.setdefault(extra.cls.__qualname__, extra)
        self.nodes: dict[str, NodeSpec] = {}
        self.edges: list[tuple[str, str]] = []
        self.waiting_edges: list[tuple[tuple[str, ...], str]] = []
        self.branches: dict[str, list[BranchSpec]] = {}
        self.compiled = False

    # ------------------------------------------------------------------ nodes
    def add_node(
        self,
        node: str | NodeFn,
        action: NodeFn | None = None,
        *,
        destinations: Sequence[str] | Mapping[str, str] | None = None,
        input_schema: type | None = None,
        metadata: Mapping[str, Any] | None = None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        inline: bool | None = None,
        **options: Any,
    ) -> StateGraph:
        """Add a node: ``add_node("name", fn)`` or ``add_node(fn)`` (named after ``fn``).

        ``fn(state)`` or ``fn(state, config)``, plain or ``async``, returns a dict of
        updates, ``None``, a :class:`Command`, or a state object. A compiled graph is a
        subgraph node: it runs on the parent's state and hands its result back.
        ``inline`` places a plain ``def`` node like a sync tool (:class:`NodeSpec`):
        pass ``False`` for one that is quick but may block or starts its own event loop.
        """
        refuse_options("add_node", options)
        if action is None:
            if isinstance(node, str):
                raise GraphBuildError(f"add_node({node!r}) needs the node's function")
            action = node
            node = _name_of(action)
        elif not isinstance(node, str):
            raise GraphBuildError("add_node(name, action): the name must be a string")
        self._check_new_name(node)
        if isinstance(destinations, str):  # tuple("bc") would be the nodes 'b' and 'c'
            raise GraphBuildError(
                f"add_node({node!r}, destinations={destinations!r}): give a list of node "
                f"names, e.g. destinations=({destinations!r},)"
            )
        spec = self._node_spec(node, action, destinations, input_schema)
        if inline is not None:
            spec = replace(spec, inline=inline)
        if retry_policy is not None:
            spec = replace(spec, retry=_policies(node, retry_policy))
        self.nodes[node] = spec
        return self

    def _check_new_name(self, name: str) -> None:
        if name in (START, END):
            raise GraphBuildError(f"node name {name!r} is reserved")
        if name in self.nodes:
            raise GraphBuildError(f"node {name!r} already exists")
        for char in _RESERVED_CHARS:
            if char in name:
                raise GraphBuildError(f"node name {name!r} contains the reserved {char!r}")

    def _node_spec(
        self,
        name: str,
        action: Any,
        destinations: Sequence[str] | Mapping[str, str] | None,
        input_schema: type | None,
    ) -> NodeSpec:
        from loopwright.graph.engine import CompiledStateGraph

        if isinstance(action, CompiledStateGraph):
            targets = tuple(destinations) if destinations is not None else ()
            return NodeSpec(name, action.ainvoke, True, True, None, targets, subgraph=action)
        if isinstance(action, StateGraph):
            raise GraphBuildError(
                f"node {name!r}: a StateGraph must be compiled before it can be a node "
                "(add_node(name, builder.compile()))"
            )
        if not callable(action):
            raise GraphBuildError(f"node {name!r}: expected a function, got {action!r}")
        hints = _hints(action)
        schema = None
        if input_schema is None:
            input_schema = _first_param_schema(action, hints)
        if input_schema is not None and input_schema is not self.state_schema:
            schema = parse_schema(input_schema)
            self.extra_keys.setdefault(input_schema.__qualname__, schema)
        ends: tuple[str, ...] | None = _command_ends(hints.get("return"))
        if destinations is not None:
            ends = tuple(destinations)
        elif not ends and _returns_bare_command(hints.get("return")):
            ends = None  # a bare `-> Command`: it may go anywhere
        return NodeSpec(name, action, _is_async(action), _takes_config(action), schema, ends)

    # ------------------------------------------------------------------ edges
    def add_edge(self, start_key: str | Sequence[str], end_key: str) -> StateGraph:
        """``start -> end``; with a list of starts, ``end`` waits until all of them ran."""
        if end_key == START:
            raise GraphBuildError("START cannot be the end of an edge")
        if isinstance(start_key, str):
            if start_key == END:
                raise GraphBuildError("END cannot be the start of an edge")
            self.edges.append((start_key, end_key))
            return self
        starts = tuple(start_key)
        if not starts:
            raise GraphBuildError("add_edge([...], end): the list of start nodes is empty")
        for start in starts:
            if start == END:
                raise GraphBuildError("END cannot be the start of an edge")
            if start not in self.nodes:
                raise GraphBuildError(f"add_edge: add node {start!r} before using it")
        if end_key != END and end_key not in self.nodes:
            raise GraphBuildError(f"add_edge: add node {end_key!r} before using it")
        self.waiting_edges.append((starts, end_key))
        return self

    def add_conditional_edges(
        self,
        source: str,
        path: Callable[..., Any],
        path_map: Mapping[Hashable, str] | Sequence[str] | None = None,
    ) -> StateGraph:
        """After ``source``, call ``path(state)``: it returns a node name, a list of names,
        or :class:`Send` objects. ``path_map`` maps its return values to node names (a
        list means identity); without it a ``-> Literal[...]`` annotation is used."""
        if not callable(path):
            raise GraphBuildError(
                f"add_conditional_edges({source!r}, path): path must be a function of the "
                f"state returning the next node name(s), got {path!r:.60}"
            )
        if path_map is None:
            path_map = _literal_map(_hints(path).get("return"))
        elif not isinstance(path_map, Mapping):
            path_map = {name: name for name in path_map}
        name = getattr(path, "__name__", "condition")
        if any(b.name == name for b in self.branches.get(source, ())) and name != "<lambda>":
            raise GraphBuildError(f"node {source!r} already has a branch named {name!r}")
        spec = BranchSpec(source, path, path_map, _is_async(path), _takes_config(path), name)
        self.branches.setdefault(source, []).append(spec)
        return self

    def add_sequence(self, nodes: Sequence[NodeFn | tuple[str, NodeFn]]) -> StateGraph:
        """Add ``nodes`` and chain them with edges, in order."""
        if not nodes:
            raise GraphBuildError("add_sequence needs at least one node")
        previous: str | None = None
        for item in nodes:
            name, action = item if isinstance(item, tuple) else (_name_of(item), item)
            self.add_node(name, action)
            if previous is not None:
                self.add_edge(previous, name)
            previous = name
        return self

    def set_entry_point(self, key: str) -> StateGraph:
        return self.add_edge(START, key)

    def set_conditional_entry_point(
        self, path: Callable[..., Any], path_map: Mapping[Hashable, str] | None = None
    ) -> StateGraph:
        return self.add_conditional_edges(START, path, path_map)

    def set_finish_point(self, key: str) -> StateGraph:
        return self.add_edge(key, END)

    # ------------------------------------------------------------------ compile
    def compile(
        self,
        checkpointer: Any = None,
        *,
        name: str | None = None,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        **options: Any,
    ) -> Any:
        """Validate the graph and return a runnable :class:`CompiledStateGraph`.

        ``checkpointer`` is a loopwright store (``MemoryStore()``, ``SQLiteStore(path)``,
        ``RedisStore(url)``, ``PostgresStore(url)``): every superstep is checkpointed
        under ``config["configurable"]["thread_id"]``. ``interrupt_before`` /
        ``interrupt_after`` (node names, or ``"*"`` for all) stop the run before / after
        those nodes; ``invoke(None, config)`` continues.
        """
        from loopwright.graph.engine import CompiledStateGraph

        refuse_options("compile", options, harmless=("debug",))
        validate(self)
        before = _static_interrupts(self, interrupt_before)
        after = _static_interrupts(self, interrupt_after)
        self.compiled = True
        return CompiledStateGraph(self, checkpointer, name or "LangGraph", (before, after))


# ---------------------------------------------------------------------- validation


def _static_interrupts(graph: StateGraph, nodes: Sequence[str] | str | None) -> frozenset[str]:
    if nodes is None:
        return frozenset()
    if nodes == "*":
        return frozenset(graph.nodes)
    names = [nodes] if isinstance(nodes, str) else list(nodes)
    for name in names:
        if name not in graph.nodes:
            raise GraphBuildError(f"interrupt node {name!r} not found")
    return frozenset(names)


def validate(graph: StateGraph) -> None:
    """Raise :class:`GraphBuildError` for unknown nodes, no entry point, unreachable nodes."""
    known = set(graph.nodes)
    for start, end in graph.edges:
        if start != START and start not in known:
            raise GraphBuildError(f"edge {start!r} -> {end!r} starts at unknown node {start!r}")
        if end != END and end not in known:
            raise GraphBuildError(f"edge {start!r} -> {end!r} ends at unknown node {end!r}")
    for source, branches in graph.branches.items():
        if source != START and source not in known:
            raise GraphBuildError(f"conditional edge starts at unknown node {source!r}")
        for branch in branches:
            for target in (branch.path_map or {}).values():
                if target != END and target not in known:
                    raise GraphBuildError(
                        f"conditional edge {branch.name!r} from {source!r} names unknown "
                        f"node {target!r}"
                    )
    for spec in graph.nodes.values():
        for target in spec.ends or ():
            if target != END and target not in known:
                raise GraphBuildError(f"node {spec.name!r} may go to unknown node {target!r}")
    if not any(s == START for s, _ in graph.edges) and START not in graph.branches:
        raise GraphBuildError(
            "the graph has no entry point: add an edge from START "
            "(builder.add_edge(START, 'first_node'))"
        )
    unreachable = [n for n in graph.nodes if n not in reachable(graph)]
    if unreachable:
        raise GraphBuildError(
            f"node(s) {', '.join(map(repr, unreachable))} cannot be reached from START: add "
            "an edge to them, or declare where a Command may go "
            "(-> Command[Literal[...]] or add_node(..., destinations=[...]))"
        )


def successors(graph: StateGraph, source: str) -> set[str]:
    """Every node ``source`` may hand over to (statically)."""
    out = {end for start, end in graph.edges if start == source}
    out.update(end for starts, end in graph.waiting_edges if source in starts)
    for branch in graph.branches.get(source, ()):
        if branch.path_map is None:
            out.update(graph.nodes)
            out.add(END)
        else:
            out.update(branch.path_map.values())
    spec = graph.nodes.get(source)
    if spec is not None:
        out.update(spec.ends if spec.ends is not None else graph.nodes)
    return out


def reachable(graph: StateGraph) -> set[str]:
    seen: set[str] = set()
    todo: list[str] = [START]
    while todo:
        for nxt in successors(graph, todo.pop()):
            if nxt not in seen and nxt != END:
                seen.add(nxt)
                todo.append(nxt)
    return seen


# ---------------------------------------------------------------------- introspection


def _policies(node: str, given: object) -> tuple[RetryPolicy, ...]:
    policies = (given,) if isinstance(given, RetryPolicy) else given
    if not isinstance(policies, list | tuple) or not all(
        isinstance(p, RetryPolicy) for p in policies
    ):
        raise GraphBuildError(
            f"add_node({node!r}, retry_policy={given!r:.60}): give a RetryPolicy(...) or a "
            "list of them"
        )
    return tuple(policies)


def _name_of(action: Any) -> str:
    name = getattr(action, "name", None) if not callable(action) else None
    name = name or getattr(action, "__name__", None) or getattr(action, "name", None)
    if not isinstance(name, str):
        raise GraphBuildError(f"give the node {action!r} a name: add_node('name', action)")
    return name


def _hints(fn: Any) -> dict[str, Any]:
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else getattr(fn, "__call__", fn)  # noqa: B004
    try:
        return get_type_hints(target)
    except Exception:  # unresolvable forward references: behave as unannotated
        return {}


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    )


def _takes_config(fn: Any) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "config" in params


def _first_param_schema(fn: Any, hints: Mapping[str, Any]) -> type | None:
    try:
        first = next(iter(inspect.signature(fn).parameters))
    except (StopIteration, TypeError, ValueError):
        return None
    hint = hints.get(first)
    return hint if schema_kind(hint) is not None else None


def _command_ends(hint: Any) -> tuple[str, ...]:
    for option in _union_members(hint):
        if get_origin(option) is Command and get_args(option):
            literal = get_args(option)[0]
            if get_origin(literal) is Literal:
                return tuple(get_args(literal))
    return ()


def _returns_bare_command(hint: Any) -> bool:
    return any(
        option is Command or (get_origin(option) is Command and not _command_ends(option))
        for option in _union_members(hint)
    )


def _union_members(hint: Any) -> tuple[Any, ...]:
    if hint is None:
        return ()
    origin = get_origin(hint)
    if origin is Union or type(hint).__name__ == "UnionType":
        return get_args(hint)
    return (hint,)


def _literal_map(hint: Any) -> dict[Hashable, str] | None:
    if get_origin(hint) is Literal:
        return {name: name for name in get_args(hint)}
    return None

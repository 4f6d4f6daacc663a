"""Mermaid diagram of a graph (the layout LangGraph's ``draw_mermaid`` produces).

Solid arrows are edges; dotted arrows are conditional edges and ``Command``
destinations (labelled when a path map renames a route). A conditional edge without a
path map or ``Literal`` return annotation may go anywhere, so it is drawn to every node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from loopwright.graph.types import END, START

if TYPE_CHECKING:
    from loopwright.graph.builder import StateGraph


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    conditional: bool = False
    label: str | None = None


@dataclass(frozen=True, slots=True)
class DrawableGraph:
    nodes: tuple[str, ...]
    edges: tuple[Edge, ...]

    @classmethod
    def of(cls, graph: StateGraph) -> DrawableGraph:
        edges: list[Edge] = []
        seen: set[tuple[str, str]] = set()

        def add(edge: Edge) -> None:
            if (edge.source, edge.target) not in seen:
                seen.add((edge.source, edge.target))
                edges.append(edge)

        for start, end in graph.edges:
            add(Edge(start, end))
        for starts, end in graph.waiting_edges:
            for start in starts:
                add(Edge(start, end))
        for source, branches in graph.branches.items():
            for branch in branches:
                if branch.path_map is None:
                    for target in [*graph.nodes, END]:
                        if target != source:
                            add(Edge(source, target, True))
                    continue
                for key, target in branch.path_map.items():
                    label = None if key == target else str(key)
                    add(Edge(source, target, True, label))
        for name, spec in graph.nodes.items():
            for target in spec.ends if spec.ends is not None else [*graph.nodes, END]:
                add(Edge(name, target, True))
        sources = {e.source for e in edges}
        for name in graph.nodes:
            if name not in sources:
                add(Edge(name, END))
        return cls((START, *graph.nodes, END), tuple(edges))

    def draw_mermaid(self) -> str:
        lines = [
            "---",
            "config:",
            "  flowchart:",
            "    curve: linear",
            "---",
            "graph TD;",
        ]
        for node in self.nodes:
            if node == START:
                lines.append(f"\t{_id(node)}([<p>{node}</p>]):::first")
            elif node == END:
                lines.append(f"\t{_id(node)}([<p>{node}</p>]):::last")
            else:
                lines.append(f"\t{_id(node)}({node})")
        for edge in self.edges:
            if not edge.conditional:
                lines.append(f"\t{_id(edge.source)} --> {_id(edge.target)};")
            elif edge.label:
                lines.append(
                    f"\t{_id(edge.source)} -. &nbsp;{edge.label}&nbsp; .-> {_id(edge.target)};"
                )
            else:
                lines.append(f"\t{_id(edge.source)} -.-> {_id(edge.target)};")
        lines += [
            "\tclassDef default fill:#f2f0ff,line-height:1.2",
            "\tclassDef first fill-opacity:0",
            "\tclassDef last fill:#bfb6fc",
        ]
        return "\n".join(lines) + "\n"


def _id(name: str) -> str:
    # Mermaid ids cannot hold spaces or punctuation; the label keeps the real name
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in name)

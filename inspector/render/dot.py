"""Graphviz's ``dot`` on plain data: the boxes' generated names and sizes, the edges and the room their labels
need; never text from the model. ``layout.layout_scene`` makes the job and reads the result back.

Why a module of its own: a job of plain data can be laid out in this process (the command line, reports) or in
another one by this same function (``serve``; the app runs it in a helper process, ``inspector.gui.dot_process``
says why), so the app's layouts are the very layouts the command line and the reports make.
"""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import dataclass, field
from typing import IO

_GRAPHVIZ_LOCK = threading.Lock()
CLUSTER_FONT_SIZE = 8.0  # points, monospace: the room reserved for a cluster's label


@dataclass(frozen=True, slots=True)
class DotJob:
    """A graph for ``dot``: nodes ``(name, width, height)`` (inches, as text), edges ``(source, target, key,
    label)`` where the label is only room (``X`` repeated) or empty, and clusters ``(name, parent cluster or "",
    member nodes, label room)``, parents first: dot keeps a cluster's nodes together inside its outline."""

    rankdir: str
    ranksep: str
    nodes: tuple[tuple[str, str, str], ...]
    edges: tuple[tuple[str, str, str, str], ...]
    clusters: tuple[tuple[str, str, tuple[str, ...], str], ...] = ()


@dataclass(frozen=True, slots=True)
class DotResult:
    """What ``dot`` made of a job: the bounding box, each node's ``pos``, each edge's ``pos`` and label position
    ``lp`` (in the job's edge order); Graphviz's own text forms, read by ``layout``."""

    bb: str
    node_pos: dict[str, str]
    edge_pos: tuple[tuple[str, str], ...]
    cluster_bb: dict[str, str] = field(default_factory=dict)


def run_dot(job: DotJob, edge_font_size: float) -> DotResult:
    """Lay ``job`` out with Graphviz's ``dot`` in this process."""
    import pygraphviz  # lazily: only laying out needs Graphviz

    with _GRAPHVIZ_LOCK:  # Graphviz keeps global state: one layout at a time, and free the graph under the lock
        graph = pygraphviz.AGraph(directed=True, strict=False)
        try:
            graph.graph_attr.update(rankdir=job.rankdir, nodesep="0.25", ranksep=job.ranksep, splines="spline")
            graph.node_attr.update(shape="box", fixedsize="true", label="", margin="0")
            graph.edge_attr.update(arrowsize="0.7", fontname="Courier", fontsize=f"{edge_font_size:g}")
            for name, width, height in job.nodes:
                graph.add_node(name, width=width, height=height)
            for src, dst, key, label in job.edges:
                if label:
                    graph.add_edge(src, dst, key=key, label=label)
                else:
                    graph.add_edge(src, dst, key=key)
            subs: dict[str, object] = {}
            for name, parent, members, room in job.clusters:
                host = subs.get(parent, graph)
                subs[name] = host.add_subgraph(list(members), name=f"cluster_{name}", label=room,  # type: ignore[attr-defined]
                                               labeljust="l", fontname="Courier", fontsize=f"{CLUSTER_FONT_SIZE:g}")
            graph.layout(prog="dot")
            bb = graph.graph_attr.get("bb") or "0,0,0,0"
            cluster_bb = {name: sub.graph_attr.get("bb") or "" for name, sub in subs.items()}  # type: ignore[attr-defined]
            node_pos = {name: graph.get_node(name).attr.get("pos") or "" for name, _w, _h in job.nodes}
            edge_pos = tuple((graph.get_edge(src, dst, key).attr.get("pos") or "",
                              graph.get_edge(src, dst, key).attr.get("lp") or "") for src, dst, key, _l in job.edges)
        finally:
            graph.close()
    return DotResult(bb, node_pos, edge_pos, cluster_bb)


def serve(lines: IO[str], out: IO[str]) -> None:
    """Lay out jobs given one per line as JSON (``DotJob`` fields, then the edge font size), answering each with
    one line of JSON: the result, or ``{"error": reason}``. Run as ``python -m inspector.render.dot`` by the app
    (``inspector.gui.dot_process``); ends when its input does."""
    for line in lines:
        try:
            rankdir, ranksep, nodes, edges, font_size, clusters = json.loads(line)
            job = DotJob(str(rankdir), str(ranksep), tuple((str(n), str(w), str(h)) for n, w, h in nodes),
                         tuple((str(s), str(t), str(k), str(lb)) for s, t, k, lb in edges),
                         tuple((str(n), str(p), tuple(str(m) for m in ms), str(r)) for n, p, ms, r in clusters))
            result = run_dot(job, float(font_size))
            reply: dict[str, object] = {"bb": result.bb, "nodes": result.node_pos, "edges": result.edge_pos,
                                        "clusters": result.cluster_bb}
        except Exception as e:  # a malformed job, a Graphviz error: one line back, and serve the next job
            reply = {"error": " ".join(f"{type(e).__name__}: {e}".split())[:300]}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)

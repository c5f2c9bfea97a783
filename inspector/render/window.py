"""A window of a scene around one box, for navigating to a box that the first ``max_nodes`` boxes leave out.

``build_scene`` keeps the first boxes of a scope in graph order; a jump to a box further down (a module deep in a
30k-node model, a search hit near the end of a large graph) asks for the boxes around it instead.
"""

from __future__ import annotations

from inspector.render.scene import Scene


def window_scene(scene: Scene, focus: str, max_nodes: int) -> Scene:
    """At most ``max_nodes`` boxes of ``scene``, consecutive in its (graph) order and centred on ``focus``, with
    the edges between them; the scene itself when it is small enough or has no box ``focus``."""
    ids = [n.id for n in scene.nodes]
    if len(ids) <= max_nodes or focus not in ids:
        return scene
    k = ids.index(focus)
    start = max(0, min(k - max_nodes // 2, len(ids) - max_nodes))
    kept = scene.nodes[start:start + max_nodes]
    keep = {n.id for n in kept}
    edges = [e for e in scene.edges if e.source in keep and e.target in keep]
    return Scene(scene.title, kept, edges, True, scene.hidden_nodes + len(ids) - len(kept))

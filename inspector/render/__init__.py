"""Graph rendering without Qt: a *scope* of an indexed model → an abstract scene (``scene``) → laid-out geometry
with Graphviz ``dot`` (``layout``), plus a standalone SVG writer for exports and reports.

pygraphviz is imported only inside the function that lays out, so this package imports without it.
"""

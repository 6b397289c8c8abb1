"""The graph view: the dataflow graph of any pass snapshot (model.py), as Model Explorer's
graph JSON (explorer_json.py), laid out in layers (layout.py) and drawn as SVG (svg.py) or a
self-contained HTML page (html.py); the nodes of two snapshots mapped through their spans
(mapping.py).  docs/graph.md describes the output."""

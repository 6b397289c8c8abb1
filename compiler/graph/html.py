"""A graph as one self-contained HTML page: the SVG of svg.py, a side panel, and a little
inline script; no network, no external file.

    text, seconds = graph_html(graph, title, source_text)

In the page: click a node to see its operator, attributes, output types, frontend layers,
fused function and Relay span, with the Relay line itself when `source_text` is given;
click a group's name to collapse it (its members and their edges are hidden, the box
keeps its place and says how many nodes it holds) or expand it again; the buttons
collapse or expand every group, and zoom.  `page.html#node=ID` opens with node ID selected
(and in view), a link to one node.
"""

from __future__ import annotations

import json
from html import escape

from .explorer_json import node_json
from .model import Graph
from .svg import graph_svg

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>{title}</title>
<style>
body {{ margin: 0; font: 13px sans-serif; display: flex; height: 100vh; }}
#canvas {{ flex: 1; overflow: auto; background: #fafafa; }}
#panel {{ width: 340px; border-left: 1px solid #ccc; padding: 8px 12px; overflow: auto; }}
#panel pre {{ white-space: pre-wrap; background: #f3f3f3; padding: 4px; font-size: 11px; }}
#panel td {{ vertical-align: top; font: 11px monospace; padding: 1px 4px; word-break: break-all; }}
#panel td:first-child {{ white-space: nowrap; }} #panel p {{ overflow-wrap: anywhere; }}
.node {{ cursor: pointer; }} .node.selected rect {{ stroke: #d60; stroke-width: 2.5; }}
.group text {{ cursor: pointer; }} .group.collapsed rect {{ fill-opacity: 0.35; stroke-dasharray: none; }}
.hidden {{ display: none; }}
</style></head>
<body><div id="canvas">{svg}</div>
<div id="panel"><h3>{title}</h3>
<p>{summary}</p>
<p><button id="collapse">collapse all</button> <button id="expand">expand all</button>
<button id="zoomin">+</button> <button id="zoomout">&minus;</button></p>
<div id="details"><p>Click a node to see where it came from; click a group's name to collapse it.</p></div></div>
<script type="application/json" id="graph-data">{data}</script>
<script>
(function () {{
  const data = JSON.parse(document.getElementById('graph-data').textContent);
  const svg = document.querySelector('svg.relaylens-graph');
  const baseW = +svg.getAttribute('width'), baseH = +svg.getAttribute('height');
  let zoom = 1;
  const collapsed = new Set();
  const inside = (ns, group) => ns === group || ns.startsWith(group + '/');
  function hiddenNs(ns) {{ for (const g of collapsed) if (inside(ns, g)) return true; return false; }}
  function refresh() {{
    const hidden = new Set();
    svg.querySelectorAll('.node').forEach((n) => {{
      const off = hiddenNs(n.dataset.ns); n.classList.toggle('hidden', off); if (off) hidden.add(n.dataset.id);
    }});
    svg.querySelectorAll('.edge').forEach((e) => {{
      const off = hidden.has(e.dataset.src) || hidden.has(e.dataset.dst);
      e.classList.toggle('hidden', off);
      const label = e.nextElementSibling; if (label) label.classList.toggle('hidden', off);
    }});
    svg.querySelectorAll('.group').forEach((g) => {{
      const ns = g.dataset.ns;
      let outer = false; for (const c of collapsed) if (ns !== c && inside(ns, c)) outer = true;
      g.classList.toggle('hidden', outer); g.classList.toggle('collapsed', collapsed.has(ns));
      const text = g.querySelector('text');
      if (!text.dataset.name) text.dataset.name = text.textContent;
      const count = data.members[ns] || 0;
      text.textContent = collapsed.has(ns) ? '\u25b8 ' + text.dataset.name + ' (' + count + ' nodes)' : text.dataset.name;
    }});
  }}
  function row(k, v) {{
    const tr = document.createElement('tr');
    for (const t of [k, v]) {{ const td = document.createElement('td'); td.textContent = t; tr.appendChild(td); }}
    return tr;
  }}
  function show(id) {{
    svg.querySelectorAll('.node.selected').forEach((n) => n.classList.remove('selected'));
    const el = svg.querySelector('.node[data-id="' + CSS.escape(id) + '"]'); if (el) el.classList.add('selected');
    const node = data.nodes[id]; const box = document.getElementById('details'); box.textContent = '';
    const h = document.createElement('h4'); h.textContent = node.label + '  (' + id + ')'; box.appendChild(h);
    if (node.namespace) {{ const p = document.createElement('p'); p.textContent = node.namespace.split('/').join(' \u25b8 '); box.appendChild(p); }}
    const table = document.createElement('table');
    for (const a of node.attrs) table.appendChild(row(a.key, a.value));
    for (const o of node.outputsMetadata) for (const a of o.attrs) if (a.key === 'type') table.appendChild(row('output ' + o.id, a.value));
    for (const e of node.incomingEdges) table.appendChild(row('input ' + e.targetNodeInputId, e.sourceNodeId + (e.sourceNodeOutputId !== '0' ? '.' + e.sourceNodeOutputId : '')));
    box.appendChild(table);
    const span = node.attrs.find((a) => a.key === 'span');
    if (span) {{
      const line = span.value.split(':')[0];
      const text = data.lines[line];
      const p = document.createElement('p'); p.textContent = 'Relay ' + data.source + ':' + span.value.split('-')[0]; box.appendChild(p);
      if (text !== undefined) {{ const pre = document.createElement('pre'); pre.textContent = line + ' | ' + text; box.appendChild(pre); }}
    }}
  }}
  svg.addEventListener('click', (ev) => {{
    const node = ev.target.closest('.node');
    if (node) {{ show(node.dataset.id); return; }}
    const group = ev.target.closest('.group');
    if (group && ev.target.tagName === 'text') {{
      const ns = group.dataset.ns; if (collapsed.has(ns)) collapsed.delete(ns); else collapsed.add(ns); refresh();
    }}
  }});
  document.getElementById('collapse').onclick = () => {{
    svg.querySelectorAll('.group').forEach((g) => {{ if (!g.dataset.ns.includes('/')) collapsed.add(g.dataset.ns); }}); refresh();
  }};
  document.getElementById('expand').onclick = () => {{ collapsed.clear(); refresh(); }};
  function setZoom(z) {{ zoom = z; svg.setAttribute('width', baseW * z); svg.setAttribute('height', baseH * z); }}
  document.getElementById('zoomin').onclick = () => setZoom(zoom * 1.25);
  document.getElementById('zoomout').onclick = () => setZoom(zoom / 1.25);
  refresh();
  const wanted = location.hash.startsWith('#node=') ? decodeURIComponent(location.hash.slice(6)) : null;
  if (wanted && data.nodes[wanted]) show(wanted);  // page.html#node=n12 opens with n12 selected
  const first = svg.querySelector(wanted && data.nodes[wanted] ? '.node.selected' : '.node');
  if (first) first.scrollIntoView({{block: wanted ? 'center' : 'start', inline: 'center'}});
}})();
</script></body></html>
"""


def graph_html(graph: Graph, title: str, source_text: str | None = None) -> tuple[str, float]:
    """The page, and the seconds the layout took."""
    svg, seconds = graph_svg(graph)
    nodes = {n.id: node_json(n) for n in graph.nodes}
    members: dict[str, int] = {}
    for n in graph.nodes:
        for d in range(1, len(n.namespace) + 1):
            ns = nodes[n.id]["namespace"].split("/")  # escaped names: count by the JSON's text
            key = "/".join(ns[:d])
            members[key] = members.get(key, 0) + 1
    lines: dict[int, str] = {}
    source = next((n.source for n in graph.nodes if n.source), "")
    if source_text is not None:
        all_lines = source_text.split("\n")
        for n in graph.nodes:
            if n.span and n.span[0] <= len(all_lines):
                lines[n.span[0]] = all_lines[n.span[0] - 1][:400]
    data = json.dumps({"nodes": nodes, "members": members, "lines": lines, "source": source})
    data = data.replace("</", "<\\/")  # no `</script>` inside the script element
    groups = sum(1 for k in members)
    summary = f"{len(graph.nodes)} nodes in {groups} groups, {len(graph.fused_groups)} of them fused functions."
    page = PAGE.format(title=escape(title), svg=svg, data=data, summary=escape(summary))
    return page, seconds

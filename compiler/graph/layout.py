"""A layered (Sugiyama-style) layout of a graph whose nodes sit in nested groups.

    lay = layout(boxes, edges)       # boxes: id -> Box(width, height, group path); edges: (src, dst)
    lay.nodes[id] -> (x, y)          # centre
    lay.edges[(src, dst)] -> [(x, y), ...]   # the route, source's bottom to target's top
    lay.groups[path] -> (x0, y0, x1, y1)     # a group's box, around all of its members

No maintained layout library is installed for Python here (graphviz, grandalf, networkx:
none), so this is the classic method, applied per group as Model Explorer does with its
layers: a group is laid out on its own (its members and its subgroups, each subgroup one
box of the size its own layout made, edges lifted to the members of the group that hold
their ends), innermost first, and then placed as a node inside its parent.  Boxes never
overlap, and each level is a small graph.  Per level:

1. layers: longest path from the sources; a source moves down to just above its first
   consumer (a weight beside its convolution, not at the top of the drawing);
2. an edge longer than one layer is routed through dummy nodes, one a layer; a source's
   long edges share them (a spine down from the source, each edge leaving it above its
   target), so an input read by every other statement of a long chain costs one dummy a
   layer, not one a layer for each of its edges (h-user's chain of 8,000 statements
   reading %x and %w: 9 GB and more than 5 minutes, quadratic; now linear);
3. order within a layer: barycentre sweeps, down then up (SWEEPS times);
4. x: each node moves towards the mean of its neighbours in the layer it was swept from,
   placed at the mean of a left-packed and a right-packed placement (both keep the order
   and the spacing, so their mean does too).

An edge is routed through the dummies of the level where its ends meet, from the source's
bottom to the target's top; where it shares its source's spine, from where the edge drawn
before it (to the nearest target above) left the spine: the spine is drawn once, in
pieces, each edge's route the piece below the one before and its branch to its target.  Edges are assumed acyclic (a dataflow graph is); an edge that
would close a cycle is drawn straight, without a layer of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

NODE_SEP = 24.0  # horizontal gap between neighbours
RANK_SEP = 40.0  # vertical gap between layers
GROUP_PAD = 10.0  # a group's box around its members
LABEL_PAD = 14.0  # room above a group's members for its name
SWEEPS = 4
PLACEMENT_ROUNDS = 6

Point = tuple[float, float]


@dataclass
class Box:
    width: float
    height: float
    group: tuple[str, ...] = ()


@dataclass
class Layout:
    nodes: dict[str, Point] = field(default_factory=dict)
    edges: dict[tuple[str, str], list[Point]] = field(default_factory=dict)
    groups: dict[tuple[str, ...], tuple[float, float, float, float]] = field(default_factory=dict)
    width: float = 0.0
    height: float = 0.0


@dataclass
class _Level:
    """One group's own layout: its children's centres and the lifted edges' dummy points,
    relative to the group's content corner."""

    centres: dict[object, Point]
    routes: dict[tuple[object, object], list[Point]]
    width: float
    height: float
    branches: set[tuple[object, object]] = field(default_factory=set)  # routes that start on a spine


def layout(boxes: dict[str, Box], edges: list[tuple[str, str]]) -> Layout:
    edges = list(dict.fromkeys((s, t) for s, t in edges if s in boxes and t in boxes and s != t))
    groups: set[tuple[str, ...]] = {()}
    for box in boxes.values():
        groups.update(box.group[:d] for d in range(1, len(box.group) + 1))
    members: dict[tuple[str, ...], list[object]] = {g: [] for g in groups}
    for g in groups:
        if g:
            members[g[:-1]].append(g)
    for v, box in boxes.items():
        members[box.group].append(v)
    lifted: dict[tuple[str, ...], list[tuple[object, object]]] = {g: [] for g in groups}
    where: dict[tuple[str, str], tuple[tuple[str, ...], object, object]] = {}
    for s, t in edges:
        level = _common(boxes[s].group, boxes[t].group)
        a, b = _child(s, boxes[s].group, level), _child(t, boxes[t].group, level)
        lifted[level].append((a, b))
        where[(s, t)] = (level, a, b)
    sizes: dict[object, Point] = {v: (b.width, b.height) for v, b in boxes.items()}
    levels: dict[tuple[str, ...], _Level] = {}
    for g in sorted(groups, key=len, reverse=True):  # the innermost first
        level = levels[g] = _flat({m: sizes[m] for m in members[g]}, lifted[g])
        if g:
            sizes[g] = (level.width + 2 * GROUP_PAD, level.height + 2 * GROUP_PAD + LABEL_PAD)
    lay = Layout()
    corner: dict[tuple[str, ...], Point] = {(): (GROUP_PAD, GROUP_PAD)}
    for g in sorted(groups, key=len):  # the outermost first: place each group's content
        ox, oy = corner[g]
        for m, (x, y) in levels[g].centres.items():
            w, h = sizes[m]
            if isinstance(m, tuple):
                lay.groups[m] = (ox + x - w / 2, oy + y - h / 2, ox + x + w / 2, oy + y + h / 2)
                corner[m] = (ox + x - w / 2 + GROUP_PAD, oy + y - h / 2 + GROUP_PAD + LABEL_PAD)
            else:
                lay.nodes[m] = (ox + x, oy + y)
    for (s, t), (g, a, b) in where.items():
        ox, oy = corner[g]
        (sx, sy), (tx, ty) = lay.nodes[s], lay.nodes[t]
        middle = [(ox + x, oy + y) for x, y in levels[g].routes.get((a, b), ())]
        start = [] if (a, b) in levels[g].branches else [(sx, sy + boxes[s].height / 2)]
        lay.edges[(s, t)] = [*start, *middle, (tx, ty - boxes[t].height / 2)]
    lay.width = levels[()].width + 2 * GROUP_PAD
    lay.height = levels[()].height + 2 * GROUP_PAD
    return lay


def _child(v: str, path: tuple[str, ...], level: tuple[str, ...]) -> object:
    """The member of group `level` that holds node `v` (in group `path`): v, or a subgroup."""
    return v if len(path) == len(level) else path[: len(level) + 1]


def _flat(sizes: dict[object, Point], edges: list[tuple[object, object]]) -> _Level:
    """The layered layout of one level (no groups in it: subgroups are boxes)."""
    edges = list(dict.fromkeys(e for e in edges if e[0] != e[1]))
    order = _topological(list(sizes), edges)
    rank = _layers(order, edges)
    vsizes = dict(sizes)
    chains: dict[tuple[object, object], list[object]] = {}
    branches: set[tuple[object, object]] = set()
    succ: dict[object, list[object]] = {v: [] for v in sizes}
    pred: dict[object, list[object]] = {v: [] for v in sizes}
    spines: dict[object, list[object]] = {}  # a source's dummies, the one at rank[s] + 1 first
    drawn: dict[object, int] = {}  # how many of a source's spine dummies earlier routes cover
    for s, t in sorted(edges, key=lambda e: rank[e[1]]):  # each source's nearest targets first
        if rank[t] <= rank[s]:  # closes a cycle: no layer of its own
            continue
        spine = spines.setdefault(s, [])
        need = rank[t] - rank[s] - 1
        while len(spine) < need:
            prev = spine[-1] if spine else s
            d = ("\0dummy", len(vsizes))
            vsizes[d] = (0.0, 0.0)
            rank[d] = rank[s] + len(spine) + 1
            succ[d], pred[d] = [], []
            succ[prev].append(d)
            pred[d].append(prev)
            spine.append(d)
        last = spine[need - 1] if need else s
        succ[last].append(t)
        pred[t].append(last)
        start = drawn.get(s, 0)
        if start:  # leaves the spine where the route before it did
            chains[(s, t)] = spine[start - 1:need]
            branches.add((s, t))
        else:
            chains[(s, t)] = spine[:need]
        drawn[s] = max(start, need)
    layers: list[list[object]] = [[] for _ in range(max(rank.values(), default=-1) + 1)]
    for v in order:
        layers[rank[v]].append(v)
    for v in vsizes:
        if v not in sizes:
            layers[rank[v]].append(v)
    _order(layers, pred, succ)
    xs = _place_x(layers, vsizes, pred, succ)
    ys: dict[object, float] = {}
    y = 0.0
    for layer in layers:
        height = max((vsizes[v][1] for v in layer), default=0.0)
        for v in layer:
            ys[v] = y + height / 2
        y += height + RANK_SEP
    left = min((xs[v] - vsizes[v][0] / 2 for v in xs), default=0.0)
    right = max((xs[v] + vsizes[v][0] / 2 for v in xs), default=0.0)
    centres = {v: (xs[v] - left, ys[v]) for v in sizes}
    routes = {e: [(xs[d] - left, ys[d]) for d in chain] for e, chain in chains.items()}
    return _Level(centres, routes, right - left, max(y - RANK_SEP, 0.0), branches)


def _topological(nodes: list[object], edges: list[tuple[object, object]]) -> list[object]:
    indeg = {v: 0 for v in nodes}
    out: dict[object, list[object]] = {v: [] for v in nodes}
    for s, t in edges:
        indeg[t] += 1
        out[s].append(t)
    ready = [v for v in reversed(nodes) if indeg[v] == 0]
    order: list[object] = []
    while ready:  # depth first: a chain stays together in the initial order
        v = ready.pop()
        order.append(v)
        for t in reversed(out[v]):
            indeg[t] -= 1
            if indeg[t] == 0:
                ready.append(t)
    seen = set(order)
    return order + [v for v in nodes if v not in seen]  # on a cycle: as given


def _layers(order: list[object], edges: list[tuple[object, object]]) -> dict[object, int]:
    place = {v: i for i, v in enumerate(order)}
    preds: dict[object, list[object]] = {v: [] for v in order}
    succs: dict[object, list[object]] = {v: [] for v in order}
    for s, t in edges:
        if place[s] < place[t]:
            preds[t].append(s)
            succs[s].append(t)
    rank: dict[object, int] = {}
    for v in order:
        rank[v] = max((rank[p] + 1 for p in preds[v]), default=0)
    for v in order:
        if not preds[v] and succs[v]:
            rank[v] = max(min(rank[t] for t in succs[v]) - 1, 0)
    return rank


def _order(layers: list[list[object]], pred, succ) -> None:
    pos = {v: float(i) for layer in layers for i, v in enumerate(layer)}
    for sweep in range(2 * SWEEPS):
        down = sweep % 2 == 0
        near = pred if down else succ
        for layer in (layers[1:] if down else layers[-2::-1]):
            bary = {v: sum(pos[n] for n in near[v]) / len(near[v]) if near[v] else pos[v] for v in layer}
            layer.sort(key=bary.__getitem__)
            for i, v in enumerate(layer):
                pos[v] = float(i)


def _gap(a: Point, b: Point) -> float:
    return (a[0] + b[0]) / 2 + NODE_SEP


def _place_x(layers: list[list[object]], boxes: dict[object, Point], pred, succ) -> dict[object, float]:
    xs: dict[object, float] = {}
    for layer in layers:
        x = 0.0
        for i, v in enumerate(layer):
            if i:
                x += _gap(boxes[layer[i - 1]], boxes[v])
            xs[v] = x
    for round_ in range(PLACEMENT_ROUNDS):
        down = round_ % 2 == 0
        for layer in (layers[1:] if down else layers[-2::-1]):
            near = pred if down else succ
            want = [sum(xs[n] for n in near[v]) / len(near[v]) if near[v] else xs[v] for v in layer]
            left = list(want)
            for i in range(1, len(layer)):
                left[i] = max(want[i], left[i - 1] + _gap(boxes[layer[i - 1]], boxes[layer[i]]))
            right = list(want)
            for i in range(len(layer) - 2, -1, -1):
                right[i] = min(want[i], right[i + 1] - _gap(boxes[layer[i]], boxes[layer[i + 1]]))
            for i, v in enumerate(layer):
                xs[v] = (left[i] + right[i]) / 2
    return xs


def _common(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return a[:n]

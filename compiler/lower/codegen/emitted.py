"""The values an emitter has made, by expression, and where each may be used again.

Code generation emits an expression node once where its value is still good and reuses
the instruction after that (llvm.py `_Emitter.expr`, lanes.py `Lanes.value`).  A value is
good at a later point when:

* its instruction dominates that point: what a region that need not run made (a loop's
  body, a branch) is forgotten when the region ends;
* the variables it uses have the same values: what an unrolled iteration made that uses
  the iteration's variable is forgotten when the iteration ends, the rest is kept for the
  iterations and statements after it (`region(rebinds=var)`);
* for a value that reads memory, nothing stored since into a buffer it reads (`stored`):
  buffers are distinct memory (`noalias` parameters, or allocated here).  A loop's body
  may run again after its own stores, so it uses no loaded value from before it, and what
  is loaded before a region that stores (a loop, an `if`) is forgotten after it.

The transforms of a Winograd convolution (te/topi/winograd.py) are written as a DAG whose
inner sums every position of an unrolled tile uses: reused across the positions, each is
emitted once per tile instead of once per position that reads it (a ResNet-50 F(4x4)
kernel's unoptimised IR: 3,459 -> 2,010 instructions; all of ResNet-50, MobileNet v2, the
GPT-2 block and BERT: 50,177 -> 46,196), which we need not build and print, nor LLVM
parse and deduplicate.  O3's result is the same, instruction for instruction, for every
kernel of those four models (GVN had merged the copies).

A read of memory is also kept by its address (`load_at`, `put_load`): where an earlier
read of the same address still dominates and nothing was stored into its buffer since,
its value is the one read.  Such a value is good after the unrolled iteration that made
it, which a read keyed by its expression is not when its index uses the iteration's
variable: a register tile's input broadcast to each of its output channel blocks, read
again in every one (an unrolled loop outside the loop over the input's positions).

Keys: `id(node) + contract` for a scalar (object ids are even, so the two never meet: a
value emitted for an accumulation, where float operations may fuse into FMAs, is not the
one of an exact statement), `(id(lane variable), first lane, width, that)` for a
vectorized loop's lanes (lanes.py): the lanes of one loop variable, first to first +
width - 1, are the same in every emission of its loop, so an iteration that rebinds the
lane variable keeps them;
`("load", id(address), lanes)` for a read by its address (lanes 0 for a scalar).
"""

from __future__ import annotations

from typing import Hashable

import llvmlite.ir as ir

from ..te import expr as te
from .lanes import uses_var


class Emitted:
    """Values by key, in the current region: `pure` those that read no memory, `loaded`
    those that do."""

    def __init__(self) -> None:
        self.pure: dict[Hashable, ir.Value] = {}
        self.loaded: dict[Hashable, ir.Value] = {}
        self._nodes: dict[Hashable, te.PrimExpr] = {}  # every key's node, in every region
        self._uses: dict[int, dict[int, bool]] = {}  # id(var) -> uses_var's memo for it
        self._buffers: dict[int, frozenset[int]] = {}  # id(node) -> ids of the buffers it reads
        self._put: list[Hashable] = []  # every key put, in order, but those forgotten as their region ended
        self._reads: dict[Hashable, frozenset[int]] = {}  # a key of `loaded` -> ids of the buffers it reads

    def get(self, key: Hashable) -> ir.Value | None:
        value = self.pure.get(key)
        return self.loaded.get(key) if value is None else value

    def put(self, key: Hashable, node: te.PrimExpr, value: ir.Value, reads_memory: bool) -> None:
        if reads_memory:
            self.loaded[key] = value
            self._reads[key] = self._read_buffers(node)
        else:
            self.pure[key] = value
        self._nodes[key] = node
        self._put.append(key)

    def load_at(self, address: ir.Value, lanes: int) -> ir.Value | None:
        """The value an earlier read of `address` (`lanes` wide, 0: a scalar) made, where
        it is still good."""
        return self.loaded.get(("load", id(address), lanes))

    def put_load(self, buffer: te.Buffer, address: ir.Value, lanes: int, value: ir.Value) -> None:
        key = ("load", id(address), lanes)
        self.loaded[key] = value
        self._reads[key] = frozenset((id(buffer),))
        self._put.append(key)

    def stored(self, buffer: te.Buffer) -> None:
        """A store into `buffer` was emitted: the values that read it are stale."""
        if self.loaded:
            b, reads = id(buffer), self._reads
            for key in [k for k in self.loaded if b in reads[k]]:
                del self.loaded[key]

    def forget_loads(self) -> None:
        self.loaded = {}

    def region(self, rebinds: te.Var | None = None, stores: bool = False) -> _Region:
        """A region of code (see the module doc), entered with `with`.  `rebinds`: an
        unrolled iteration with that variable bound anew, whose values that do not use it
        are kept after it; else code that need not run, whose values are forgotten after
        it.  `stores`: the region may store (a loop's body, an `if`): it starts without
        loaded values and leaves none."""
        return _Region(self, rebinds, stores)

    def enter(self, stores: bool) -> tuple[dict, dict, int]:
        """`region`'s start: what its end (`leave`) restores or keeps."""
        pure, loaded = self.pure, self.loaded
        self.pure, self.loaded = dict(pure), ({} if stores else dict(loaded))
        return pure, loaded, len(self._put)

    def leave(self, entered: tuple[dict, dict, int], rebinds: te.Var | None, stores: bool) -> None:
        pure, loaded, start = entered
        if rebinds is not None:
            made = self._put[start:]
            self.pure = self._kept(pure, self.pure, made, rebinds)
            self.loaded = {} if stores else self._kept(loaded, self.loaded, made, rebinds)
            # what is forgotten leaves the record too: the loops this iteration is
            # unrolled within look over what it kept only (nested unrolled loops went
            # over every key once per loop: 656,000 keys for 179,000 kept in
            # ResNet-50's kernels)
            self._put[start:] = [k for k in made if k in self.pure or k in self.loaded]
        else:
            self.pure, self.loaded = pure, ({} if stores else loaded)
            del self._put[start:]

    def _kept(self, before: dict, now: dict, made: list, var: te.Var) -> dict:
        """`now` (the region's own dict, changed in place) without what the region made
        (`made`: the keys it put, in order) that uses `var` (but the lanes of `var`, and
        reads by address).
        Only those keys are looked at: an unrolled loop's every iteration would otherwise
        go over all the values the code before it made (a quarter of a ResNet-50 Winograd
        kernel's code generation)."""
        uses = self._uses.setdefault(id(var), {})
        for k in made:
            if k in now and k not in before and not (isinstance(k, tuple) and k[0] in (id(var), "load")) \
                    and uses_var(self._nodes[k], var, uses):
                del now[k]
        return now

    def reads_memory(self, e: te.PrimExpr) -> bool:
        found = self._buffers.get(id(e))
        return bool(self._read_buffers(e) if found is None else found)

    def _read_buffers(self, e: te.PrimExpr) -> frozenset[int]:
        memo = self._buffers
        found = memo.get(id(e))
        if found is None:
            found = frozenset()
            for k in te.children(e):
                more = memo.get(id(k))
                if more is None:
                    more = self._read_buffers(k)
                if more:
                    found = found | more if found else more
            if isinstance(e, te.BufferLoad):
                found = found | {id(e.buffer)}
            memo[id(e)] = found
        return found


class _Region:
    """`Emitted.region`'s block: a class, not a generator, entered some 34,000 times over
    ResNet-50's kernels (a generator's context manager cost as much again as the work)."""

    __slots__ = ("emitted", "rebinds", "stores", "entered")

    def __init__(self, emitted: Emitted, rebinds: te.Var | None, stores: bool) -> None:
        self.emitted, self.rebinds, self.stores = emitted, rebinds, stores

    def __enter__(self) -> None:
        self.entered = self.emitted.enter(self.stores)

    def __exit__(self, kind, err, trace) -> bool:
        self.emitted.leave(self.entered, self.rebinds, self.stores)
        return False

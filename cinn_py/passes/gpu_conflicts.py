"""Whether two accesses of a bind-lowered kernel (`gpu_sync` collects them) can touch the same
element from different GPU threads or blocks: their indices are affine in `blockIdx.*`,
`threadIdx.*`, serial loop variables and symbolic dims, so `_Conflicts` asks the polyhedral
analysis (isl) whether a solution with the required relation of the bound variables exists,
with the symbolic dims fixed to a few small sample sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from cinn_py.analysis.isl_convert import IslNames, affine_text, condition_text
from cinn_py.ir import (
    Add, Buffer, CudaAxisInfo, Expr, For, IntImm, Mul, Mutator, Var, int32, int64, substitute, walk,
)
from cinn_py.symbolic.analyzer import Analyzer

_AXES = ("x", "y", "z")


@dataclass(frozen=True)
class _Event:
    """An access of a buffer (`buffer` set) or a barrier, at position `pos` in program order."""

    pos: int
    context: tuple[object, ...]
    buffer: Buffer | None = None
    index: Expr | None = None
    is_store: bool = False
    indices: tuple[Expr, ...] = ()
    """The multi-dimensional indices `index` flattens (affine where the flat index, with a
    symbolic stride `i * S0 + j`, is not)."""


# ---------------------------------------------------------------------------------------------
# isl: do two instances touch one element with the required bound-variable relation?
# ---------------------------------------------------------------------------------------------
class _Conflicts:
    """Pairs of accesses decided with isl. `binding` fixes symbolic dims to sizes (see
    `_sample_bindings`): a race found there is a real race of the kernel run at that size."""

    def __init__(self, info: CudaAxisInfo, symbols: list[Var], binding: dict[Var, IntImm] | None = None,
                 strict: bool = False) -> None:
        self.info = info
        self.strict = strict
        """Whether a pair isl cannot decide, even at the sample sizes, counts as a conflict: the
        auto scheduler keeps a tiling only when it is proven race-free."""
        self.symbols = list(symbols)
        self.binding = dict(binding or {})
        self.analyzer = Analyzer({})
        self._products: dict[Expr, Var] = {}
        self.witness = ""
        """The sizes at which the last `exists` found its race, when only concrete sizes showed it."""

    def _affine(self, e: Expr) -> Expr:
        """`e` with products of symbolic dims (`S1 * S2`, non-affine for isl) as fresh parameters."""
        names = {s.name for s in self.symbols}

        class _Params(Mutator):
            def visit_mul(inner, node: Mul) -> Expr:  # noqa: N805
                node = inner.generic_visit(node)
                if (isinstance(node, Mul) and not isinstance(node.a, IntImm)
                    and not isinstance(node.b, IntImm)):
                    free = [v for v in walk(node) if isinstance(v, Var)]
                    if free and all(v.name in names for v in free):
                        return self._product(node)
                return node

        return _Params().visit(e)

    def _product(self, node: Mul) -> Var:
        var = self._products.get(node)
        if var is None:
            var = Var(f"cinn_prod_{len(self._products)}", int64, is_symbolic_constant=True,
                      lower_bound=IntImm(int64, 1))
            self._products[node] = var
            self.symbols.append(var)
        return var

    def _side(self, ev: _Event, tag: str, names: IslNames,
              element: tuple[Expr, ...]) -> tuple[list[str], dict[str, Var]] | None:
        """Constraints of one instance of `ev` (vars renamed with `tag`) touching `element` (its
        flat index, or its indices: `ELEM_<tag>_<k>`); None if not affine."""
        renamed: dict[Var, Var] = {}
        bound: dict[str, Var] = {}
        constraints: list[str] = []
        known = set(self.symbols) | set(self._products.values())
        for prefix, dims in (("blockIdx", self.info.grid_dims), ("threadIdx", self.info.block_dims)):
            for axis, dim in zip(_AXES, dims):
                for dtype in (int32, int64):
                    var = Var(f"{prefix}.{axis}", dtype)
                    renamed[var] = Var(f"{prefix}_{axis}_{tag}", int64)
                new = renamed[Var(f"{prefix}.{axis}", int64)]
                known.add(new)
                bound[f"{prefix}.{axis}"] = new
                extent = self._text(_int64(dim), {}, names, known)
                if extent is None:
                    return None
                # Ranges for the analyzer: `blockIdx.x / 3` is quasi-affine only once it is
                # proven non-negative.
                self.analyzer.bind(new, 0, substitute(_int64(dim), self.binding))
                constraints.append(f"0 <= {names.name(new)} < {extent}")
        for entry in ev.context:
            if isinstance(entry, For):
                var = Var(f"{entry.loop_var.name}_{tag}", int64)
                lo = self._text(entry.min, renamed, names, known)
                hi = self._text(Add(entry.min, entry.extent), renamed, names, known)
                if lo is None or hi is None:
                    return None
                self.analyzer.bind(var, substitute(_int64(entry.min), {**self.binding, **renamed}),
                                   substitute(_int64(entry.extent), {**self.binding, **renamed}))
                renamed[entry.loop_var] = var
                known.add(var)
                constraints.append(f"{lo} <= {names.name(var)} < {hi}")
            else:
                node, branch = entry  # type: ignore[misc]
                cond_expr = self._affine(substitute(node.condition, {**self.binding, **renamed}))
                known.update(self._products.values())
                cond = condition_text(cond_expr, names, known, self.analyzer)
                if cond is None:
                    return None
                constraints.append(cond if branch else f"not ({cond})")
        for k, e in enumerate(element):
            index = self._text(e, renamed, names, known)
            if index is None:
                return None
            constraints.append(f"{index} = ELEM_{tag}_{k}")
        loops = {e.loop_var.name: renamed[e.loop_var] for e in ev.context if isinstance(e, For)}
        return constraints, {**bound, **loops}

    def _text(self, e: Expr, renamed: dict[Var, Var], names: IslNames, known: set[Var]) -> str | None:
        e = self._affine(substitute(e, {**self.binding, **renamed}))
        known.update(self._products.values())
        return affine_text(e, names, known, self.analyzer)

    def exists(self, a: _Event, b: _Event, relation: str, common_loops: tuple[str, ...] = (),
               loops_differ: bool = False) -> bool:
        """Whether instances of `a` and `b` touch one element with `relation` between their bound
        vars ("blocks differ" or "same block, threads differ"). Where symbolic dims make an index
        or guard non-affine (`blockIdx.x / S0`, `k * ((S0 + 3) / 4)`), the pair is decided again at
        a few concrete sizes: a race at one of them is a race of the kernel (it has no bucket
        bounds at this point, so the sizes are small, the ones every bucket's guards admit)."""
        self.witness = ""
        found = self._decide(a, b, relation, common_loops, loops_differ)
        if found is not None or self.binding:
            return bool(found)
        if not self.symbols:
            return self.strict
        undecided = False
        for binding in _sample_bindings(self.symbols):
            at = _Conflicts(self.info, [], binding)._decide(a, b, relation, common_loops, loops_differ)
            if at:
                self.witness = " (at " + ", ".join(f"{v.name}={c.value}" for v, c in binding.items()
                                                   if v.dtype == int64) + ")"
                return True
            undecided = undecided or at is None
        # race-free at every sample size is accepted (as without strict); a pair isl cannot read
        # even at concrete sizes is a race when strict
        return self.strict and undecided

    def _decide(self, a: _Event, b: _Event, relation: str, common_loops: tuple[str, ...],
                loops_differ: bool) -> bool | None:
        """`exists` decided symbolically; None when an index, bound or guard is not affine."""
        names = IslNames()
        element_a, element_b = (a.index,), (b.index,)
        sa, sb = self._side(a, "a", names, element_a), self._side(b, "b", names, element_b)  # type: ignore[arg-type]
        if (sa is None or sb is None) and len(a.indices) == len(b.indices) > 1:
            # A symbolic stride makes the flat index non-affine; equal in-bounds indices are the
            # same element, so compare them dimension by dimension.
            names, element_a, element_b = IslNames(), a.indices, b.indices
            sa, sb = self._side(a, "a", names, element_a), self._side(b, "b", names, element_b)
        if sa is None or sb is None:
            return None
        (ca, va), (cb, vb) = sa, sb
        n = names.name
        if relation == "blocks differ":
            rel = " or ".join(f"{n(va[f'blockIdx.{x}'])} != {n(vb[f'blockIdx.{x}'])}" for x in _AXES)
        else:
            same = " and ".join(f"{n(va[f'blockIdx.{x}'])} = {n(vb[f'blockIdx.{x}'])}" for x in _AXES)
            differ = " or ".join(f"{n(va[f'threadIdx.{x}'])} != {n(vb[f'threadIdx.{x}'])}" for x in _AXES)
            rel = f"{same} and ({differ})"
        if common_loops:
            pairs = [f"{n(va[lp])} {'!=' if loops_differ else '='} {n(vb[lp])}" for lp in common_loops]
            rel = f"({rel}) and ({(' or ' if loops_differ else ' and ').join(pairs)})"
        params = [names.name(s) for s in self.symbols]
        lower = [f"{names.name(s)} >= {_lower_bound(s)}" for s in self.symbols]
        same_element = " and ".join(f"ELEM_a_{k} = ELEM_b_{k}" for k in range(len(element_a)))
        body = " and ".join([*(f"({c})" for c in ca + cb), same_element, f"({rel})", *lower])
        elements = [f"ELEM_{tag}_{k}" for tag in ("a", "b") for k in range(len(element_a))]
        variables = sorted(set(names.by_name) - set(params)) + elements
        try:
            found = isl.Set(f"[{', '.join(params)}] -> {{ [{', '.join(variables)}] : {body} }}")
        except isl.Error:
            return None  # a construct isl cannot read: do not claim a race from it
        return not found.is_empty()


def _sample_bindings(symbols: list[Var]) -> list[dict[Var, IntImm]]:
    """Small sizes for the symbolic dims (each at least its lower bound): all at the bound, all
    one and four above it, and all different (a race may need unequal dims)."""
    samples = [[_lower_bound(s) + step for s in symbols] for step in (0, 1, 4)]
    samples.append([_lower_bound(s) + 1 + k for k, s in enumerate(symbols)])
    bindings = []
    for values in samples:
        binding: dict[Var, IntImm] = {}
        for sym, value in zip(symbols, values):
            for dtype in (int32, int64):
                binding[Var(sym.name, dtype)] = IntImm(dtype, value)
        if binding not in bindings:
            bindings.append(binding)
    return bindings


def _lower_bound(sym: Var) -> int:
    """Symbolic dims are at least their lower bound (1 when unset), as in `cinn_py.symbolic`."""
    lb = sym.lower_bound
    if isinstance(lb, IntImm):
        return lb.value
    return lb if isinstance(lb, int) else 1


def _int64(e: Expr) -> Expr:
    return IntImm(int64, e.value) if isinstance(e, IntImm) else e

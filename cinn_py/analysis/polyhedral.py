"""islpy analyses of a LoweredFunc: iteration domains, access relations, dependences, regions.

An *instance* of a block is the tuple of its enclosing loop vars (`B[i, j]`); symbolic dims are
isl parameters constrained by their lower bounds (`S0 >= 1`). Loop bounds, guards and indices are
translated exactly when quasi-affine (`isl_convert`); otherwise the analysis over-approximates
(a non-affine guard is dropped, a non-affine index may touch the whole dimension `[0, shape)`)
and reports `exact=False`. Over-approximation only ever adds dependences, so legality checks
built on these answers stay safe.

Execution order is the 2d+1 schedule of the current loop nest: statement positions interleaved
with loop vars, compared lexicographically (`sites.BlockSite.schedule`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import islpy as isl

from cinn_py.analysis.isl_convert import IslNames, affine_text, condition_text
from cinn_py.analysis.sites import Access, BlockSite, collect_sites
from cinn_py.diagnostics import CinnError
from cinn_py.ir import Add, Expr, For, IntImm, LoweredFunc, ScheduleBlockRealize, Var, print_ir_marked, walk
from cinn_py.symbolic.analyzer import Analyzer
from cinn_py.symbolic.linear import var_ranges


class AnalysisError(CinnError):
    """An analysis was asked about a block or loop that is not in the function."""


BlockRef = str | ScheduleBlockRealize


@dataclass(frozen=True)
class AccessRelation:
    """One access of a block as an isl map `Block[loops] -> buffer[indices]`."""

    access: Access
    relation: isl.Map
    exact: bool


@dataclass(frozen=True)
class BlockAccesses:
    reads: tuple[AccessRelation, ...]
    writes: tuple[AccessRelation, ...]

    @property
    def exact(self) -> bool:
        return all(a.exact for a in self.reads + self.writes)

    def read_map(self) -> isl.UnionMap:
        return _union(a.relation for a in self.reads)

    def write_map(self) -> isl.UnionMap:
        return _union(a.relation for a in self.writes)


@dataclass(frozen=True)
class Dependences:
    """Instance pairs `src[...] -> dst[...]` with src executed first, per kind."""

    raw: isl.UnionMap
    war: isl.UnionMap
    waw: isl.UnionMap
    exact: bool

    def is_empty(self) -> bool:
        return self.raw.is_empty() and self.war.is_empty() and self.waw.is_empty()


def _union(maps: Iterable[isl.Map]) -> isl.UnionMap:
    result = isl.UnionMap("{ }")
    for m in maps:
        result = result.union(isl.UnionMap.from_map(m))
    return result


def _constraints_suffix(constraints: list[str]) -> str:
    """The end of an isl set/map text: ` : (c0) and (c1) }`, or ` }` when unconstrained."""
    return f" : {' and '.join(f'({c})' for c in constraints)} }}" if constraints else " }"


class PolyContext:
    """isl views of one function; names are consistent across every set and map it builds."""

    def __init__(self, func: LoweredFunc) -> None:
        if not isinstance(func, LoweredFunc):
            raise TypeError(f"analysis: expected a LoweredFunc, got {type(func).__name__}")
        self.func = func
        self.names = IslNames()
        self.sites = collect_sites(func)
        self.max_sched = max((len(s.schedule) for s in self.sites), default=0)
        self.stmt_names = {id(s): self._stmt_name(s) for s in self.sites}

    # -- lookup ------------------------------------------------------------------------------------
    def site(self, ref: BlockRef) -> BlockSite:
        for s in self.sites:
            if s.realize is ref or s.name == ref:
                return s
        name = ref if isinstance(ref, str) else ref.name
        known = ", ".join(s.name for s in self.sites)
        raise AnalysisError(f"analysis: block '{name}' is not in function '{self.func.name}' "
                            f"(blocks: {known})")

    def sites_under(self, loop: For) -> list[BlockSite]:
        under = [s for s in self.sites if any(lp is loop for lp in s.loops)]
        if not under and not any(n is loop for n in walk(self.func.body)):
            raise AnalysisError(f"analysis: loop '{loop.loop_var.name}' is not in function "
                                f"'{self.func.name}'",
                                print_ir_marked(self.func))
        return under

    def _stmt_name(self, site: BlockSite) -> str:
        base = self.names.name(Var(f"S_{site.name}"))
        return base

    # -- text building -----------------------------------------------------------------------------
    def analyzer(self, site: BlockSite, upto: int | None = None) -> Analyzer:
        loops = site.loops if upto is None else site.loops[:upto]
        return Analyzer(var_ranges(loops))

    def params(self, extra: Sequence[Var] = ()) -> list[Var]:
        """Symbolic dims of the function, then `extra` (outer loop vars used as parameters)."""
        out = list(self.func.scalar_args)
        out.extend(v for v in extra if v not in out)
        return out

    def free_params(self, exprs: Iterable[Expr], bound: set[Var]) -> list[Var]:
        """Vars used in `exprs` that no loop binds (symbolic dims, `threadIdx.x`, ...)."""
        found: list[Var] = []
        for e in exprs:
            for node in walk(e):
                if isinstance(node, Var) and node not in bound and node not in found:
                    found.append(node)
        return found

    def param_constraints(self, params: Sequence[Var]) -> list[str]:
        out = []
        for p in params:
            if p.is_symbolic_constant:
                lb = p.lower_bound.value if isinstance(p.lower_bound, IntImm) else 1
                out.append(f"{self.names.name(p)} >= {lb}")
        return out

    def domain_parts(self, site: BlockSite, as_params: int = 0
                     ) -> tuple[list[Var], list[str], list[str], bool]:
        """(params, dim names, constraints, exact) of a site's domain; the first `as_params`
        loops become parameters."""
        loop_vars = [lp.loop_var for lp in site.loops]
        exprs: list[Expr] = [e for lp in site.loops for e in (lp.min, lp.extent)]
        exprs += [g for g, _ in site.guards]
        for acc in site.accesses():
            exprs.extend(acc.indices)
        free = self.free_params(exprs, set(loop_vars))
        params = self.params(loop_vars[:as_params] + [v for v in free if v not in self.func.scalar_args])
        params = [p for p in params if p in set(loop_vars[:as_params]) or p not in loop_vars]
        known = set(params) | set(loop_vars)
        constraints = self.param_constraints(params)
        exact = True
        for k, lp in enumerate(site.loops):
            an = self.analyzer(site, k)
            lo = affine_text(lp.min, self.names, known, an)
            hi = affine_text(Add(lp.min, lp.extent), self.names, known, an)
            v = self.names.name(lp.loop_var)
            if lo is not None:
                constraints.append(f"{v} >= {lo}")
            if hi is not None:
                constraints.append(f"{v} < {hi}")
            exact &= lo is not None and hi is not None
        exact &= self._add_guards(site.guards, known, self.analyzer(site), constraints)
        dims = [self.names.name(v) for v in loop_vars[as_params:]]
        return params, dims, constraints, exact

    def _add_guards(self, guards: Sequence[tuple[Expr, bool]], known: set[Var], an: Analyzer,
                    constraints: list[str]) -> bool:
        """Append each guard (negated on its false branch) to `constraints`; False when one is
        not quasi-affine and is left out (the set over-approximates)."""
        exact = True
        for cond, polarity in guards:
            text = condition_text(cond, self.names, known, an)
            if text is None:
                exact = False
                continue
            constraints.append(text if polarity else f"not ({text})")
        return exact

    def _space_prefix(self, params: Sequence[Var]) -> str:
        return "[" + ", ".join(self.names.name(p) for p in params) + "] -> "

    # -- sets and maps -----------------------------------------------------------------------------
    def domain(self, site: BlockSite, as_params: int = 0) -> tuple[isl.Set, bool]:
        params, dims, constraints, exact = self.domain_parts(site, as_params)
        text = f"{self._space_prefix(params)}{{ {self.stmt_names[id(site)]}[{', '.join(dims)}]"
        text += _constraints_suffix(constraints)
        return isl.Set(text), exact

    def access_relation(self, site: BlockSite, acc: Access, as_params: int = 0) -> AccessRelation:
        params, dims, constraints, exact = self.domain_parts(site, as_params)
        known = set(params) | {lp.loop_var for lp in site.loops}
        an = self.analyzer(site)
        outs = [f"o{k}" for k in range(len(acc.indices))]
        for k, index in enumerate(acc.indices):
            text = affine_text(index, self.names, known, an)
            if text is not None:
                constraints.append(f"o{k} = {text}")
                continue
            exact = False
            constraints.append(f"o{k} >= 0")
            shape = acc.tensor.shape[k] if k < len(acc.tensor.shape) else None
            bound = affine_text(shape, self.names, known, an) if shape is not None else None
            if bound is not None:
                constraints.append(f"o{k} < {bound}")
        exact &= self._add_guards(acc.guards, known, an, constraints)
        buffer = self.names.name(Var(f"B_{acc.tensor.buffer.name}"))
        text = (f"{self._space_prefix(params)}{{ {self.stmt_names[id(site)]}[{', '.join(dims)}] -> "
                f"{buffer}[{', '.join(outs)}]")
        text += _constraints_suffix(constraints)
        return AccessRelation(acc, isl.Map(text), exact)

    def accesses(self, site: BlockSite, as_params: int = 0) -> BlockAccesses:
        rels = [self.access_relation(site, acc, as_params) for acc in site.accesses()]
        return BlockAccesses(tuple(r for r in rels if not r.access.is_write),
                             tuple(r for r in rels if r.access.is_write))

    def schedule(self, site: BlockSite) -> isl.Map:
        """`Block[loops] -> T[p0, i, p1, j, ...]` padded with zeros to a common length."""
        params, dims, constraints, _ = self.domain_parts(site)
        items = [self.names.name(x.loop_var) if isinstance(x, For) else str(x) for x in site.schedule]
        items += ["0"] * (self.max_sched - len(items))
        text = (f"{self._space_prefix(params)}{{ {self.stmt_names[id(site)]}[{', '.join(dims)}] -> "
                f"T[{', '.join(items)}]")
        text += _constraints_suffix(constraints)
        return isl.Map(text)

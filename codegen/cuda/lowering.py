"""The GPU post-processing pipeline run before printing CUDA C: a CUDA target's post-lowering
passes (`Target.cuda().passes`: `cross_thread_reduce` -> `gpu_bind` -> `simplify_indices`, all in
`cinn_py.passes`), as the pipeline's `target_passes` step runs them (codegen sits below the
pipeline: it runs the target's pass list itself, it does not call the pipeline)."""

from __future__ import annotations

from cinn_py.ir import LoweredFunc
from cinn_py.passes import run_passes
from cinn_py.passes.index_simplify import simplify_indices
from cinn_py.target import Target, TargetLike

__all__ = ["lower_for_cuda", "simplify_indices"]


def lower_for_cuda(func: LoweredFunc, target: TargetLike = "cuda") -> LoweredFunc:
    """Cross-thread reduction, bind lowering and simplification: ready for the CUDA printer."""
    return run_passes(func, Target.parse(target).passes)

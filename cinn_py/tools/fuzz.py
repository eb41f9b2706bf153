"""The fuzzer: random programs x random schedules, checked end to end against numpy.

    python -m cinn_py.tools.fuzz --examples 1000 --seed 1 [--cuda] [--steps 6] [--timeout 30]
    python -m cinn_py.tools.fuzz --seed 1 --case 17          # re-run one case in-process, verbosely
    python -m cinn_py.tools.fuzz --examples 500 --auto        # hand schedules + schedule="auto"
    python -m cinn_py.tools.fuzz --examples 500 --net         # NetBuilder programs, schedule="auto"
    python -m cinn_py.tools.fuzz --examples 200 --auto --cuda --emulate   # run the CUDA kernels (no GPU)
    python -m cinn_py.tools.fuzz --examples 1000 --torch-strides  # torch.compile(backend="cinn_py") vs eager

Each case (derived deterministically from `(seed, index)`):

1. generates a compute-DSL program (`cinn_py.tools.fuzzing.programs`) and lowers it;
2. runs the interpreter (`run_ir`) and compares with the independent numpy reference;
3. applies a random schedule (`cinn_py.tools.fuzzing.schedgen`) and compares `run_ir` of the
   scheduled function with the unscheduled one;
4. builds the scheduled function for x86 and compares the kernel's outputs with the reference;
5. with `--cuda`, binds the loops to GPU threads and compiles CUDA C with NVRTC (compile only);
6. with `--auto`, also builds the program with `schedule="auto"`: for x86 it runs the kernel
   against the reference, for CUDA it generates the auto-scheduled kernels (one per shape
   bucket when there are symbolic dims) and compiles them with NVRTC.

With `--emulate` the CUDA stages run their kernels in the CPU emulator (`codegen.cuda.emulator`:
the exact CUDA C, compiled with g++) and compare them with the reference like the x86 stages, instead
of only compiling them with NVRTC: a wrong barrier, warp shuffle or thread index is a failure.

`--net` generates NetBuilder programs instead (`cinn_py.tools.fuzzing.netgen`: random op graphs
of elementwise, broadcast, reduction, softmax/norm, transpose, select and matmul ops) and runs
each through decomposition, fusion and the automatic scheduler (`compile_program(...,
schedule="auto")`) on x86 against the ops' numpy implementations (`Program.run_numpy`), plus
the CUDA codegen + NVRTC compile of every group.

`--torch-strides` fuzzes the torch backend instead (`cinn_py.tools.fuzzing.torchgen`): random
functions of strided tensors chaining views (permute, transpose, expand, slices, select, unsqueeze,
reshape, view) with converted ops and eager ones (`special.erfcx`, graph breaks), compiled with
`torch.compile(backend="cinn_py", options={"strict": True})` and compared with eager: values,
`.stride()` of every output (its dims longer than 1), and a `view` of each output attempted exactly
where eager's works.

The automatic scheduler must never fail on a valid program (one that lowered and matched the
reference in the interpreter): in the auto stages every exception is a failure, whatever its
type, and so is a `RecursionError` or an internal `TypeError` anywhere.

Outcomes: `ok`; `rejected` with a documented error type (`ScheduleError`, `CompileError`,
`LoweringError`, `ValueError`, `TypeError`: a component refused the input cleanly); `fail`
(a wrong result, any other exception, a crash of the process; also a `CompileError` from NVRTC
or the LLVM verifier: generated code that its own compiler rejects); or `timeout` (no result
within the load-scaled limit, twice: the second time re-run alone; reported apart from the
failures, exit status 3 when there is no failure). Comparisons use `programs.tolerance(dtype,
mag, err)`: integer and boolean results must match exactly; float results within 8x the
propagated rounding-error bound of the program plus 4 ulps of the output's magnitude bound.

The CLI runs cases in a worker subprocess (`faulthandler` on), so a segfault in generated code
is reported as a failure of that case (a case past its time limit is re-run alone first) and the
run goes on with a fresh worker.
Failing cases are shrunk (schedule steps, outputs, subexpressions) and printed as a reproducer:
the DSL program, the IR (`print_ir(..., decls=True)`), the trace (`trace.as_python()`), the
input seed and bindings, and what differed.

This module is an entry point (like `cinn_py.pipeline`): it imports `schedules` lazily.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
# the fuzzer's API by family (tests and tools import these names from here)
from cinn_py.tools.fuzzing.dsl_case import (FUNC_NAME, Case, check_dsl_case, compare, describe_dsl_case,
                                            make_case, reproducer, run_case)
from cinn_py.tools.fuzzing.net_case import check_net_case, describe_net_case, make_net_case, net_to_python
from cinn_py.tools.fuzzing.outcome import (DOCUMENTED_ERRORS, Options, Result, _as_tuple, _Failure,
                                           compile_cuda_auto, nvrtc_available)
from cinn_py.tools.fuzzing.torch_case import check_torch_strides_case

__all__ = ["DOCUMENTED_ERRORS", "FUNC_NAME", "Case", "Options", "Result", "_Failure", "_as_tuple",
           "check_case",
           "check_dsl_case", "check_net_case", "check_torch_strides_case", "compare", "compile_cuda_auto",
           "describe_case", "describe_dsl_case", "make_case", "make_net_case", "main", "net_to_python",
           "nvrtc_available", "reproducer", "run_case"]


def check_case(seed: int, index: int, opts: Options) -> Result:
    """Run one case; on failure, shrink it and attach the reproducer."""
    if opts.torch_strides or opts.torch_values:
        return check_torch_strides_case(seed, index, opts.torch_values)
    if opts.net:
        return check_net_case(seed, index, opts)
    return check_dsl_case(seed, index, opts)


def describe_case(seed: int, index: int, opts: Options) -> str:
    """The reproducer text of a case without running it (for crashes and hangs)."""
    if opts.torch_strides or opts.torch_values:
        from cinn_py.tools.fuzzing import torchgen  # noqa: PLC0415

        return torchgen.generate(seed, index, opts.torch_values).script()
    if opts.net:
        return describe_net_case(seed, index)
    return describe_dsl_case(seed, index, opts)


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------
def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m cinn_py.tools.fuzz",
                                description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--examples", type=int, default=200, help="number of cases (default 200)")
    p.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    p.add_argument("--start", type=int, default=0, help="first case index (default 0)")
    p.add_argument("--case", type=int, default=None, help="run only this case, in-process, verbosely")
    p.add_argument("--cuda", action="store_true", help="also generate CUDA C and compile it with NVRTC")
    p.add_argument("--emulate", action="store_true",
                   help="run the CUDA kernels (--cuda, --auto, --net) in the CPU emulator against the "
                        "reference "
                        "instead of only compiling them with NVRTC")
    p.add_argument("--no-x86", action="store_true", help="skip building and running on x86")
    p.add_argument("--auto", action="store_true",
                   help='also build every program with schedule="auto" (x86: run; CUDA: NVRTC compile)')
    p.add_argument("--auto-only", action="store_true", help="with --auto: no random hand schedule")
    p.add_argument("--net", action="store_true",
                   help='NetBuilder programs through compile_program(schedule="auto")')
    p.add_argument("--grad", action="store_true",
                   help="with --net: also check the backward program (cinn_py.autodiff.grad): compiled with "
                        "schedule='auto' vs its numpy reference, and vs a float64 central difference")
    p.add_argument("--torch-strides", action="store_true",
                   help='random strided torch functions through torch.compile(backend="cinn_py") vs eager: '
                        'values, '
                        "strides and views of every output")
    p.add_argument("--torch-values", action="store_true",
                   help='random torch functions on NaN/inf/-0.0 inputs (value-sensitive ops, zero divisors, '
                        'out-of-range indices) through torch.compile(backend="cinn_py") vs eager: '
                        "values, NaN positions and errors")
    p.add_argument("--specials", action="store_true",
                   help="DSL and --net cases: NaN, +-inf, -0.0 and 0.0 in the float inputs (and, with --net, "
                        "divisors that may be zero); NaN positions must match the reference")
    p.add_argument("--auto-cuda-every", type=int, default=1,
                   help="compile the auto-scheduled CUDA kernels every n-th case only (default 1)")
    p.add_argument("--steps", type=int, default=6, help="schedule steps per case (default 6)")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds per case on an idle machine (default 60; scaled by the load per CPU, at "
                        "most 8x); a case past it is re-run alone with 4x the limit and is a 'timeout' "
                        "(exit status 3 when there is no failure) only if it times out again")
    p.add_argument("--no-shrink", action="store_true", help="print failures without shrinking them")
    p.add_argument("--in-process", action="store_true", help="no worker subprocess (no crash isolation)")
    p.add_argument("--describe", action="store_true",
                   help="with --case: print the case's program, IR and schedule without running it")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _options(ns: argparse.Namespace) -> Options:
    return Options(x86=not ns.no_x86, cuda=ns.cuda, steps=ns.steps, shrink=not ns.no_shrink, auto=ns.auto,
                   hand=not ns.auto_only,
                   auto_cuda_every=ns.auto_cuda_every, net=ns.net or ns.grad, emulate=ns.emulate,
                   grad=ns.grad, torch_strides=ns.torch_strides, torch_values=ns.torch_values,
                   specials=ns.specials)


def main(argv: list[str] | None = None) -> int:
    ns = _parse(argv)
    opts = _options(ns)
    if ns.worker:
        from cinn_py.tools.fuzzing.worker import worker_loop  # noqa: PLC0415

        return worker_loop(ns.seed, ns.start, ns.start + ns.examples, opts, check_case)
    if ns.case is not None and ns.describe:
        print(describe_case(ns.seed, ns.case, opts))
        return 0
    if ns.case is not None:
        result = check_case(ns.seed, ns.case, opts)
        print(json.dumps(dataclasses.asdict(result) | {"reproducer": None}, indent=1))
        if result.reproducer:
            print(result.reproducer)
        return 1 if result.status == "fail" else 0
    from cinn_py.tools.fuzzing.worker import Summary, run_in_process, run_with_workers  # noqa: PLC0415

    start = time.monotonic()
    summary = Summary(expected=ns.examples)
    indices = range(ns.start, ns.start + ns.examples)
    if ns.in_process:
        run_in_process(ns.seed, indices, opts, check_case, summary)
    else:
        worker_args = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--in-process"]
        run_with_workers(ns.seed, indices, opts, ns.timeout, worker_args, summary)
    print(summary.format(time.monotonic() - start))
    return 1 if summary.failures else 3 if summary.timeouts else 0


if __name__ == "__main__":
    sys.exit(main())

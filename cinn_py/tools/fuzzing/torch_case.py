"""Torch cases (`torchgen`): random strided or value-sensitive torch functions through
`torch.compile(backend="cinn_py")` against eager."""

from __future__ import annotations

from cinn_py.tools.fuzzing.outcome import Result, _first_line



def check_torch_strides_case(seed: int, index: int, values: bool = False) -> Result:
    """A random strided torch function compiled by the `cinn_py` backend vs eager (`torchgen.check`):
    a wrong value, stride or view, and any exception of the compiled function, is a failure."""
    from cinn_py.tools.fuzzing import torchgen  # noqa: PLC0415

    result = Result(index, "ok")
    stage = "generate"
    mode = "values" if values else "strides"
    try:
        case = torchgen.generate(seed, index, values)
        stage = "compare"
        detail = torchgen.check(case)
    except Exception as exc:  # noqa: BLE001 - eager ran every line: any exception is the backend's
        result.status, result.stage, result.error = "fail", stage, f"{type(exc).__name__}: {_first_line(exc)}"
    else:
        if detail is not None:
            result.status, result.stage, result.detail = "fail", stage, detail
    if result.status == "fail":
        result.reproducer = "\n".join([
            f"=== FAIL torch-{mode} case {index} (seed {seed}) at {result.stage}",
            f"what differed: {result.error} {result.detail}".strip(),
            f"--- reproduce: python -m cinn_py.tools.fuzz --torch-{mode} --seed {seed} "
            f"--case {index}",
            "--- script:", torchgen.generate(seed, index, values).script() if stage != "generate" else "",
        ])
    return result

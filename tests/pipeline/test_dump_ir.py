"""The pipeline's named steps as observed by `CINN_PY_DUMP_IR=DIR` and `cinn-py dump-ir`
(`--stage STEP`, `--diff A B`, NetBuilder scripts)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.cli import main
from cinn_py.pipeline import DUMP_ENV, PIPELINE, STEPS, trace

NET = textwrap.dedent("""\
    import cinn_py as cp

    nb = cp.NetBuilder("net")
    x = nb.create_input("float32", [4, 8], "X")
    w = nb.create_input("float32", [8], "W")
    a, b = nb.add(x, w), nb.add(x, w)   # the same op twice: CSE keeps one
    y = nb.relu(nb.multiply(a, b))
    s = nb.reduce_sum(y, [1])
    program = nb.build()
    """)
FUNC = textwrap.dedent("""\
    import cinn_py as cp

    X = cp.placeholder((4, 32), "float32", "X")
    Y = cp.compute((4, 32), lambda i, j: X[i, j] * 2.0, "Y")
    name = "twice"
    args = [X, Y]
    """)


def _net_program() -> cp.frontend.Program:
    nb = cp.NetBuilder("net")
    x = nb.create_input("float32", [4, 8], "X")
    w = nb.create_input("float32", [8], "W")
    nb.reduce_sum(nb.relu(nb.add(x, w)), [1])
    return nb.build()


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def net(tmp_path: Path) -> str:
    (tmp_path / "net.py").write_text(NET)
    return str(tmp_path / "net.py")


@pytest.fixture()
def func_file(tmp_path: Path) -> str:
    (tmp_path / "twice.py").write_text(FUNC)
    return str(tmp_path / "twice.py")


# -- CINN_PY_DUMP_IR ---------------------------------------------------------------------------------
def test_dump_env_writes_every_step_numbered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "dump"
    monkeypatch.setenv(DUMP_ENV, str(out))
    compiled = cp.compile_program(_net_program(), "x86")
    x, w = np.ones((4, 8), np.float32), np.arange(8, dtype=np.float32)
    np.testing.assert_allclose(compiled(x, w), np.maximum(x + w, 0).sum(axis=1))
    names = sorted(p.name for p in out.iterdir())
    group = compiled.funcs[0].name
    assert names == ["00_decompose_net.txt", "01_optimize_net.txt", "02_fuse_net.txt",
                     f"03_lower_{group}.txt",
                     f"04_schedule_{group}.txt", f"05_target_passes_{group}.txt", f"06_codegen_{group}.txt",
                     f"07_load_{group}.txt"]
    decomposed = (out / "00_decompose_net.txt").read_text()
    assert decomposed.startswith("program net(X: float32[4, 8], W: float32[8])")
    assert (out / "02_fuse_net.txt").read_text().startswith(f"group {group} [kReduction] (")
    assert (out / f"03_lower_{group}.txt").read_text().startswith(f"function {group} (")
    assert re.search(rf"^define .*@{group}\(", (out / f"06_codegen_{group}.txt").read_text(), re.M)
    assert (out / f"07_load_{group}.txt").read_text().startswith(f"<Kernel x86 '{group}'")


def test_dump_env_covers_build_and_codegen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    X = cp.placeholder((4, 32), "float32", "X")
    func = cp.lower("twice", [X, cp.compute((4, 32), lambda i, j: X[i, j] * 2.0, "Y")])
    monkeypatch.setenv(DUMP_ENV, str(tmp_path / "x86"))
    cp.build(func, "x86", schedule="auto")
    assert sorted(p.name for p in (tmp_path / "x86").iterdir()) == [
        "04_schedule_twice.txt", "05_target_passes_twice.txt", "06_codegen_twice.txt", "07_load_twice.txt"]
    assert "vectorize[" in (tmp_path / "x86" / "04_schedule_twice.txt").read_text()
    monkeypatch.setenv(DUMP_ENV, str(tmp_path / "cuda"))
    code = cp.codegen(func, "cuda", schedule="auto")
    assert sorted(p.name for p in (tmp_path / "cuda").iterdir()) == [
        "04_schedule_twice.txt", "05_target_passes_twice.txt", "06_codegen_twice.txt"]
    lowered = (tmp_path / "cuda" / "05_target_passes_twice.txt").read_text()
    assert "ScheduleBlock" not in lowered and "threadIdx.x" in lowered  # blocks inlined, binds lowered
    assert (tmp_path / "cuda" / "06_codegen_twice.txt").read_text() == code.source + "\n"


def test_no_dump_without_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DUMP_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    cp.compile_program(_net_program(), "x86")
    assert list(tmp_path.iterdir()) == []


def test_trace_yields_the_steps_in_pipeline_order() -> None:
    outputs = list(trace(_net_program(), "x86", until="codegen", show_codegen=True))
    assert [o.step for o in outputs] == list(STEPS[:7])
    assert [o.step for o in trace(_net_program(), until="fuse")] == ["decompose", "optimize", "fuse"]
    with pytest.raises(ValueError,
                       match="unknown pipeline step 'gpu'; the steps are: decompose, optimize, fuse, "
                                         "lower, schedule, target_passes, codegen, load"):
        list(trace(_net_program(), until="gpu"))


# -- cinn-py dump-ir ---------------------------------------------------------------------------------
@pytest.mark.parametrize("step", [s for s in STEPS if s != "load"])
def test_stage_takes_every_step_name(step: str, net: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "dump-ir", net, "--stage", step, "--target", "x86")
    assert code == 0, err
    first = {"decompose": "program net(", "optimize": "program net(",
             "fuse": "group net_group_0 [kReduction]",
             "lower": "function net_group_0 (", "schedule": "function net_group_0 (",
             "target_passes": "function net_group_0 (", "codegen": "; ModuleID"}[step]
    assert out.startswith(first), out[:200]


def test_stage_load_builds_the_kernel(net: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "dump-ir", net, "--stage", "load", "--target", "x86", "--auto")
    assert code == 0 and out.startswith("<Kernel x86 'net_group_0' inputs=[") and out.count("<Kernel") == 1


def test_netbuilder_script_default_view(net: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "dump-ir", net)
    assert code == 0
    headers = [line for line in out.splitlines() if line.startswith("// -----")]
    assert headers == ["// ----- program: net (as built) -----", "// ----- optimize: net -----",
                       "// ----- fuse: net -----"]
    built, optimized, fused = out.split("// ----- ")[1:]
    assert built.count("= add(X, ") == 2 and optimized.count("= add(X, ") == 1  # CSE
    assert "multiply(add_1, add_1)" in optimized
    assert fused.splitlines()[1].startswith("group net_group_0 [kReduction] (")


def test_stage_all_of_a_function(func_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "dump-ir", func_file, "--auto", "--stage", "all")
    assert code == 0
    headers = [line for line in out.splitlines() if line.startswith("// -----")]
    assert (headers == [f"// ----- {step}: twice -----" for step
                        in ("lower", "schedule", "target_passes", "codegen")])
    assert "__global__" in out.split("// ----- codegen: twice -----")[1]


def test_diff_between_steps(func_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "dump-ir", func_file, "--auto", "--diff", "lower", "schedule")
    assert code == 0
    lines = out.splitlines()
    assert lines[:2] == ["--- lower/twice", "+++ schedule/twice"]
    assert lines[2].startswith("@@ ")
    assert any(line.startswith("-") and "serial for (i, 0, 4)" in line for line in lines)
    assert any(line.startswith("+") and "thread_bind[blockIdx.x]" in line for line in lines)


def test_diff_of_program_steps_and_of_equal_steps(net: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "dump-ir", net, "--diff", "decompose", "optimize")
    assert code == 0 and out.startswith("--- decompose/net\n+++ optimize/net\n")
    assert "-  add_3: float32[4, 8] = add(X, broadcast_to_2)" in out.splitlines()
    assert "+  multiply_4: float32[4, 8] = multiply(add_1, add_1)" in out.splitlines()
    code, out, _ = _run(capsys, "dump-ir", net, "--diff", "lower", "schedule")
    assert code == 0 and out == "// lower and schedule are the same for net_group_0\n"


@pytest.mark.parametrize("argv",
                         [["--stage", "gpu"], ["--stage", "simplified"], ["--diff", "lower", "scheduled"]])
def test_unknown_step_names_list_the_steps(argv: list[str], net: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "dump-ir", net, *argv)
    assert code == 1 and out == ""
    assert err.startswith("error: unknown pipeline step '")
    assert err.rstrip().endswith("the steps are: " + ", ".join(STEPS))


def test_program_steps_need_a_program(func_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "dump-ir", func_file, "--stage", "fuse")
    assert code == 1
    assert ("step 'fuse' needs a NetBuilder program" in err
            and "lower, schedule, target_passes, codegen, load" in err)


def test_netbuilder_script_errors(tmp_path: Path, net: str, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("program = 3\n")
    code, _, err = _run(capsys, "dump-ir", str(bad))
    assert code == 1 and "`program` must be a NetBuilder Program" in err and "got a int" in err
    (tmp_path / "s.py").write_text("pass\n")
    code, _, err = _run(capsys, "dump-ir", net, "--schedule", str(tmp_path / "s.py"))
    assert code == 1 and "use --auto" in err


def test_help_lists_the_pipeline_steps(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["dump-ir", "--help"])
    out = capsys.readouterr().out
    for step in PIPELINE:
        assert f"  {step.name:<14} {step.doc}" in out


def test_dump_env_naming_a_file_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23 item 10: it raised FileExistsError from mkdir."""
    target = tmp_path / "dump.txt"
    target.write_text("keep me")
    monkeypatch.setenv(DUMP_ENV, str(target))
    message = r"CINN_PY_DUMP_IR='.*dump.txt' names an existing file.*must name a directory"
    with pytest.raises(ValueError, match=message):
        cp.compile(_net_program(), "x86")
    assert target.read_text() == "keep me"


def test_dump_env_under_a_file_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "f").write_text("")
    monkeypatch.setenv(DUMP_ENV, str(tmp_path / "f" / "sub"))
    with pytest.raises(ValueError, match="cannot write the step dump"):
        cp.compile(_net_program(), "x86")

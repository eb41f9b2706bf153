"""The `cinn-py` command line: dump-ir on .ir and .py files, errors, codegen, run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cinn_py.cli import main
from tests.lower.test_seed_example import EXPECTED as SEED_TEXT

ROOT = Path(__file__).resolve().parents[2]
SMALL_IR = textwrap.dedent("""\
    function fn (_A, _B)
    {
      ScheduleBlock(root)
      {
        serial for (i, 0, 32)
        {
          ScheduleBlock(B)
          {
            i0 = axis.bind(i)
            B[i0] = (A[i0] * 2.00000000f)
          }
        }
      }
    }""")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_dump_ir_of_python_file_is_the_seed_golden(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "dump-ir", str(ROOT / "examples/seed_example.py"))
    assert code == 0
    assert out.rstrip("\n") == SEED_TEXT.rstrip("\n")


def test_dump_ir_of_ir_file_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "small.ir"
    path.write_text(SMALL_IR)
    code, out, _ = _run(capsys, "dump-ir", str(path))
    assert code == 0
    assert out.rstrip("\n") == SMALL_IR


def test_dump_ir_with_schedule_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "small.ir").write_text(SMALL_IR)
    (tmp_path / "sched.py").write_text('sch.split(sch.get_loops("B")[0], [4, -1])\n')
    code, out, _ = _run(capsys, "dump-ir", str(tmp_path / "small.ir"), "--schedule",
                        str(tmp_path / "sched.py"))
    assert code == 0
    assert "serial for (i, 0, 4)" in out and "serial for (i_0, 0, 8)" in out


def test_dump_ir_schedule_step(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "dump-ir", str(ROOT / "examples/seed_example.py"), "--schedule",
                        str(ROOT / "examples/seed_schedule.py"), "--stage", "schedule")
    assert code == 0
    assert "thread_bind[threadIdx.x] for (rb_3, 0ll, 32ll)" in out


def test_schedule_error_is_a_clean_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "small.ir").write_text(SMALL_IR)
    (tmp_path / "sched.py").write_text('sch.split(sch.get_loops("B")[0], [-1, -1])\n')
    code, out, err = _run(capsys, "dump-ir", str(tmp_path / "small.ir"), "--schedule",
                          str(tmp_path / "sched.py"))
    assert code == 1 and out == ""
    assert err.startswith("error: split:") and "Traceback" not in err


def test_parse_error_is_a_clean_message_and_debug_shows_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.ir"
    path.write_text("function fn (_A\n{\n}\n")
    code, _, err = _run(capsys, "dump-ir", str(path))
    assert code == 1 and err.startswith("error: ") and "Traceback" not in err
    code, _, err = _run(capsys, "--debug", "dump-ir", str(path))
    assert code == 1 and "Traceback" in err


@pytest.mark.parametrize("argv", [["dump-ir", "/nonexistent.ir"], ["dump-ir", str(ROOT / "README.md")]])
def test_bad_files(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, *argv)
    assert code == 1 and err.startswith("error: ")


def test_python_file_must_name_what_to_lower(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.py"
    path.write_text("x = 1\n")
    code, _, err = _run(capsys, "dump-ir", str(path))
    assert code == 1 and "must assign `func`" in err


def test_codegen_cuda_and_x86(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "small.ir"
    path.write_text(SMALL_IR)
    sched = tmp_path / "bind.py"
    sched.write_text('i0, i1 = sch.split(sch.get_loops("B")[0], [-1, 8])\n'
                     'sch.bind(i0, "blockIdx.x")\nsch.bind(i1, "threadIdx.x")\n')
    code, out, _ = _run(capsys, "codegen", str(path), "--schedule", str(sched), "--target", "cuda")
    assert code == 0 and "__global__" in out and "(int)threadIdx.x" in out
    code, out, _ = _run(capsys, "codegen", str(path), "--schedule", str(sched), "--target", "cuda",
                        "--emit", "ptx")  # the printed source also compiles with NVRTC
    assert code == 0 and ".entry fn" in out

    code, out, _ = _run(capsys, "codegen", str(path), "--target", "x86", "--emit", "llvm")
    assert code == 0 and "define" in out


def test_codegen_and_run_auto_schedule_without_a_schedule_on_cuda(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "small.ir"
    path.write_text(SMALL_IR)
    code, out, err = _run(capsys, "codegen", str(path), "--target", "cuda")  # no schedule: auto, and said so
    assert code == 0 and "(int)threadIdx.x" in out and "no --schedule for target cuda: auto-scheduling" in err
    code, out, err = _run(capsys, "codegen", str(path), "--target", "x86", "--auto", "--emit", "llvm-unopt")
    assert code == 0 and "define" in out and not err
    code, out, _ = _run(capsys, "run", str(path), "--auto")
    assert code == 0 and "OK: matches the interpreter" in out
    code, _, err = _run(capsys, "run", str(path), "--auto", "--schedule", str(path))
    assert code == 1 and "exclude each other" in err


def test_run_compares_with_the_interpreter(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "run", str(ROOT / "examples/seed_example.py"), "--dims", "S1=2,S2=3")
    assert code == 0 and "OK: matches the interpreter" in out
    code, _, err = _run(capsys, "run", str(ROOT / "examples/seed_example.py"), "--dims", "S9=2")
    assert code == 1 and "not symbolic dims" in err


def test_console_script_entry_point() -> None:
    result = subprocess.run([sys.executable, "-m", "cinn_py", "dump-ir",
                             str(ROOT / "examples/seed_example.py")],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("function fn (_X, _F, S1, S2)")


def test_broken_pipe_exits_quietly(tmp_path: Path) -> None:
    """`cinn-py dump-ir X | head -1` must not print a BrokenPipeError traceback (the program is
    large enough that its text overflows the pipe buffer after `head` has left)."""
    script = tmp_path / "chain.py"
    script.write_text("import cinn_py as cp\nt = cp.placeholder((4, 4), 'float32', 'X')\nx = t\n"
                      "for n in range(400):\n"
                      "    t = cp.compute((4, 4), lambda i, j, t=t: t[i, j] + 1.0, f'T{n}')\n"
                      "args = [x, t]\n")
    cmd = f"{sys.executable} -m cinn_py dump-ir {script} | head -1"
    result = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, cwd=ROOT)
    assert result.stdout == "function chain (_X, _T399)\n"
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr


def test_bench_tiny_is_forwarded(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "bench", "relu", "--repeat", "1", "--tiny")
    assert code == 0 and "relu" in out


def test_bench_json_and_no_auto_are_forwarded(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    code, out, _ = _run(capsys, "bench", "colsum", "--repeat", "1", "--tiny", "--json", "--no-auto")
    assert code == 0 and [row["name"] for row in json.loads(out)] == ["colsum"]
    assert json.loads(out)[0]["auto_ms"] is None


def test_bench_has_every_option_of_the_bench_tool(capsys: pytest.CaptureFixture[str]) -> None:
    # `cinn-py bench` and `python -m cinn_py.tools.bench` share one parser: --peers reaches the run
    import json

    code, out, _ = _run(capsys, "bench", "relu", "--repeat", "1", "--tiny", "--json", "--no-auto",
                        "--peers", "numba")
    assert code == 0 and "numba_ms" in json.loads(out)[0]


def test_bench_bad_repeat_is_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "bench", "relu", "--repeat", "0", "--tiny")
    assert code == 1 and "repeat must be a positive int" in err and "Traceback" not in err


def test_dump_ir_of_a_netbuilder_build_function(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "net.py"
    script.write_text(textwrap.dedent("""\
        import cinn_py as cp

        def build():
            nb = cp.NetBuilder("tt")
            x = nb.create_input("float32", [3, 5], "X")
            nb.exp(nb.transpose(nb.transpose(x, [1, 0]), [1, 0]))
            return nb.build()
        """))
    code, out, _ = _run(capsys, "dump-ir", str(script))
    assert code == 0
    built, optimized, fused = out.split("// ----- ")[1:]
    assert built.startswith("program: tt (as built)") and built.count("= transpose(") == 2
    assert optimized.startswith("optimize: tt") and "transpose" not in optimized and "= exp(X)" in optimized
    assert fused.startswith("fuse: tt") and "group tt_group_0 [kElementWise] (X) -> (exp_2)" in fused


def test_dump_ir_build_function_must_return_a_program(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "bad.py"
    script.write_text("def build():\n    return 3\n")
    code, _, err = _run(capsys, "dump-ir", str(script))
    assert code == 1 and "`build()` must be a NetBuilder Program" in err and "got a int" in err


def test_fuzz_subcommand_passes_its_options_to_the_fuzzer(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "fuzz", "--examples", "2", "--seed", "5", "--in-process", "--auto",
                          "--auto-only")
    assert code == 0, out + err
    assert "fuzz: 2 cases" in out
    assert "[fuzz] 2/2 cases" in err  # the progress line


def test_options_of_other_commands_are_still_checked(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["demo", "--bogus"])
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err

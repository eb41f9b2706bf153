"""A function lowered in one process and scheduled in another (the parallel compile's workers)
gets the same schedule as in-process: statement uids (schedule handles) must not collide with
the uids the scheduling process allocates. Workers counting uids from 1, as their parent did,
made the matmul tactic's handles name other loops (StaleHandleError) and every matmul of a
multi-group program fell back to a naive nest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LOWER = """
import pickle, sys
from cinn_py.frontend import NetBuilder
from cinn_py.pipeline import trace_program
from cinn_py.target import Target
nb = NetBuilder("mm")
a = nb.create_input("float32", [16, 48], "a")
b = nb.create_input("float32", [48, 64], "b")
prog = nb.build([nb.relu(nb.matmul(a, b))])
funcs = [s.value for s in trace_program(prog, until="lower", target=Target.parse("x86")) if s.step == "lower"]
pickle.dump(funcs[0], open(sys.argv[1], "wb"))
"""

SCHEDULE = """
import pickle, sys
import schedules.tactics as tactics
from cinn_py.target import Target
sch = tactics.auto_schedule(pickle.load(open(sys.argv[1], "rb")), target=Target.parse("x86"))
print(sch.report.strategy, sch.report.fallbacks)
"""


def _python(code: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True,
                          timeout=120, cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_child_process_uids_do_not_collide_with_the_parents() -> None:
    from cinn_py.ir import new_uid

    mine = new_uid()
    theirs = int(_python("from cinn_py.ir import new_uid; print(new_uid())"))
    assert abs(theirs - mine) > 1 << 32, (mine, theirs)


def test_function_pickled_from_a_fresh_process_gets_the_matmul_schedule(tmp_path: Path) -> None:
    path = str(tmp_path / "func.pkl")
    _python(LOWER, path)
    out = _python(SCHEDULE, path)
    assert out.startswith("x86-matmul []"), out

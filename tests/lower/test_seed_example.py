"""The seed example (seed 003 §2.2 (1)) lowered with `cinn_py.lower`, pinned as CINN prints it.

    X[S1, S2, 1024] -E-> A = X * 2 -E-> B = A + 1 -R-> C = sum_k B -E-> D = C * 2
                    -B-> E = broadcast D to [S1, S2, 1024] -E-> F = E + 1

Where the expected text intentionally differs from the seed's schematic listing:

- the seed draws `C__reduce_init` in a loop nest of its own, before a second nest for the update;
  real CINN `ast_gen.cc` (which we follow) puts the init block inside the spatial loops of `C`,
  right before the reduce loop `k`, and stores into the tensor `C__reduce_init` (the seed writes
  `C_init`), which shares the buffer `_C`;
- block iter vars are CINN's generated names (`i0, i1, i2`, then `i0_0, ...` for the next block;
  the reduce iter var continues the numbering: `i2_1`), not the seed's `vi, vj, vk`;
- S1 and S2 are symbolic, so every loop bound, extent and index literal is int64 (`0ll`, `1024ll`),
  and S1, S2 become trailing int64 arguments (`function fn (_X, _F, S1, S2)`);
- float literals print as CINN prints float32 (`2.00000000f`), binary ops are fully
  parenthesised, and the six loop nests sit in one `ScheduleBlock(root)` (a Block of several
  statements, hence the doubled braces).
"""

from __future__ import annotations

import cinn_py as cp
from cinn_py.ir import ArgIO, Buffer, For, ScheduleBlockRealize, Var, walk
from cinn_py.ir import dtype as dt

EXPECTED = """\
function fn (_X, _F, S1, S2)
{
  ScheduleBlock(root)
  {
    {
      serial for (i, 0ll, S1)
      {
        serial for (j, 0ll, S2)
        {
          serial for (k, 0ll, 1024ll)
          {
            ScheduleBlock(A)
            {
              i0, i1, i2 = axis.bind(i, j, k)
              A[i0, i1, i2] = (X[i0, i1, i2] * 2.00000000f)
            }
          }
        }
      }
      serial for (i, 0ll, S1)
      {
        serial for (j, 0ll, S2)
        {
          serial for (k, 0ll, 1024ll)
          {
            ScheduleBlock(B)
            {
              i0_0, i1_0, i2_0 = axis.bind(i, j, k)
              B[i0_0, i1_0, i2_0] = (A[i0_0, i1_0, i2_0] + 1.00000000f)
            }
          }
        }
      }
      serial for (i, 0ll, S1)
      {
        serial for (j, 0ll, S2)
        {
          ScheduleBlock(C__reduce_init)
          {
            i0_1, i1_1 = axis.bind(i, j)
            C__reduce_init[i0_1, i1_1] = 0.00000000f
          }
          serial for (k, 0ll, 1024ll)
          {
            ScheduleBlock(C)
            {
              i0_2, i1_2, i2_1 = axis.bind(i, j, k)
              C[i0_2, i1_2] = (C[i0_2, i1_2] + B[i0_2, i1_2, i2_1])
            }
          }
        }
      }
      serial for (i, 0ll, S1)
      {
        serial for (j, 0ll, S2)
        {
          ScheduleBlock(D)
          {
            i0_3, i1_3 = axis.bind(i, j)
            D[i0_3, i1_3] = (C[i0_3, i1_3] * 2.00000000f)
          }
        }
      }
      serial for (i, 0ll, S1)
      {
        serial for (j, 0ll, S2)
        {
          serial for (k, 0ll, 1024ll)
          {
            ScheduleBlock(E)
            {
              i0_4, i1_4, i2_2 = axis.bind(i, j, k)
              E[i0_4, i1_4, i2_2] = D[i0_4, i1_4]
            }
          }
        }
      }
      serial for (i, 0ll, S1)
      {
        serial for (j, 0ll, S2)
        {
          serial for (k, 0ll, 1024ll)
          {
            ScheduleBlock(F)
            {
              i0_5, i1_5, i2_3 = axis.bind(i, j, k)
              F[i0_5, i1_5, i2_3] = (E[i0_5, i1_5, i2_3] + 1.00000000f)
            }
          }
        }
      }
    }
  }
}
"""


def build_seed() -> tuple[cp.ComputeTensor, cp.ComputeTensor]:
    """The seed program; Python int literals promote to float32 like the seed's `* 2`, `+ 1`."""
    S1, S2 = cp.sym("S1"), cp.sym("S2")
    X = cp.placeholder((S1, S2, 1024), "float32", "X")
    A = cp.compute((S1, S2, 1024), lambda i, j, k: X[i, j, k] * 2, "A")
    B = cp.compute((S1, S2, 1024), lambda i, j, k: A[i, j, k] + 1, "B")
    k = cp.reduce_axis(1024, "k")
    C = cp.compute((S1, S2), lambda i, j: cp.reduce_sum(B[i, j, k], [k]), "C")
    D = cp.compute((S1, S2), lambda i, j: C[i, j] * 2, "D")
    E = cp.compute((S1, S2, 1024), lambda i, j, k: D[i, j], "E")
    F = cp.compute((S1, S2, 1024), lambda i, j, k: E[i, j, k] + 1, "F")
    return X, F


def test_seed_example_prints_exactly() -> None:
    X, F = build_seed()
    assert str(cp.lower("fn", [X, F])) + "\n" == EXPECTED


def test_seed_example_signature_and_temp_buffers() -> None:
    X, F = build_seed()
    func = cp.lower("fn", [X, F])
    assert [(a.io, a.name) for a in func.args] == [
        (ArgIO.INPUT, "_X"), (ArgIO.OUTPUT, "_F"), (ArgIO.SCALAR, "S1"), (ArgIO.SCALAR, "S2")]
    assert all(a.var.dtype == dt.int64 and a.var.is_symbolic_constant for a in func.args[2:])
    assert [b.name for b in func.temp_bufs] == ["_A", "_B", "_C", "_D", "_E"]
    assert all(isinstance(b, Buffer) for b in func.temp_bufs)


def test_seed_example_is_int64_throughout() -> None:
    X, F = build_seed()
    func = cp.lower("fn", [X, F])
    loops = [n for n in walk(func.body) if isinstance(n, For)]
    assert len(loops) == 3 + 3 + 3 + 2 + 3 + 3
    assert all(lp.loop_var.dtype == dt.int64 and lp.min.dtype == dt.int64 and lp.extent.dtype == dt.int64
               for lp in loops)
    blocks = [n for n in walk(func.body) if isinstance(n, ScheduleBlockRealize)]
    iter_vars = [v for b in blocks for v in b.schedule_block.iter_vars]
    assert iter_vars and all(isinstance(v, Var) and v.dtype == dt.int64 for v in iter_vars)
    reduce_iters = [v.name for v in iter_vars if v.is_reduce_axis]
    assert reduce_iters == ["i2_1"]


def test_init_and_update_share_the_output_buffer() -> None:
    X, F = build_seed()
    func = cp.lower("fn", [X, F])
    blocks = {b.name: b.schedule_block for b in walk(func.body) if isinstance(b, ScheduleBlockRealize)}
    init, update = blocks["C__reduce_init"].body, blocks["C"].body
    assert init.tensor.name == "C__reduce_init" and update.tensor.name == "C"
    assert init.tensor.buffer is update.tensor.buffer or init.tensor.buffer == update.tensor.buffer
    assert init.tensor.buffer.name == "_C"

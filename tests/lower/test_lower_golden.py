"""Golden lowering tests: the exact CINN text `lower` prints for each kind of compute.

Each expected string was read against CINN's rules (reference/cinn.md §1.5-1.7, ast_gen.cc):
serial loops over the default axis names, one ScheduleBlock per tensor with iter vars from
`unique_name("i<d>")`, reduce init blocks inside the spatial loops, int64 everywhere once a dim
is symbolic.
"""

from __future__ import annotations

import cinn_py as cp
from cinn_py.ir import reset_name_ids


def _check(func: object, expected: str) -> None:
    assert str(func) + "\n" == expected


ELEMENTWISE = """\
function fn (_A, _B)
{
  ScheduleBlock(root)
  {
    serial for (i, 0, 32)
    {
      serial for (j, 0, 64)
      {
        ScheduleBlock(B)
        {
          i0, i1 = axis.bind(i, j)
          B[i0, i1] = (A[i0, i1] * 2.00000000f)
        }
      }
    }
  }
}
"""


def test_elementwise() -> None:
    A = cp.placeholder((32, 64), "float32", "A")
    B = cp.compute((32, 64), lambda i, j: A[i, j] * 2.0, "B")
    func = cp.lower("fn", [A, B])
    _check(func, ELEMENTWISE)


BROADCAST = """\
function bcast (_A, _B)
{
  ScheduleBlock(root)
  {
    serial for (i, 0, 4)
    {
      serial for (j, 0, 8)
      {
        ScheduleBlock(B)
        {
          i0, i1 = axis.bind(i, j)
          B[i0, i1] = A[i0]
        }
      }
    }
  }
}
"""


def test_broadcast() -> None:
    A = cp.placeholder((4,), "float32", "A")
    B = cp.compute((4, 8), lambda i, j: A[i], "B")
    func = cp.lower("bcast", [A, B])
    _check(func, BROADCAST)


MULTI_AXIS_KEEPDIMS = """\
function keep (_A, _B)
{
  ScheduleBlock(root)
  {
    serial for (i, 0, 1)
    {
      serial for (j, 0, 3)
      {
        serial for (k, 0, 1)
        {
          ScheduleBlock(B__reduce_init)
          {
            i0, i1, i2 = axis.bind(i, j, k)
            B__reduce_init[i0, i1, i2] = 0.00000000f
          }
          serial for (r0, 0, 2)
          {
            serial for (r2, 0, 4)
            {
              ScheduleBlock(B)
              {
                i0_0, i1_0, i2_0, i3, i4 = axis.bind(i, j, k, r0, r2)
                B[i0_0, i1_0, i2_0] = (B[i0_0, i1_0, i2_0] + A[i3, i1_0, i4])
              }
            }
          }
        }
      }
    }
  }
}
"""


def test_multi_axis_keepdims() -> None:
    A = cp.placeholder((2, 3, 4), "float32", "A")
    r0 = cp.reduce_axis(2, "r0")
    r2 = cp.reduce_axis(4, "r2")
    B = cp.compute((1, 3, 1), lambda i, j, k: cp.reduce_sum(A[r0, j, r2], [r0, r2]), "B")
    func = cp.lower("keep", [A, B])
    _check(func, MULTI_AXIS_KEEPDIMS)


FULL_REDUCTION = """\
function mean (_A, _U)
{
  ScheduleBlock(root)
  {
    {
      ScheduleBlock(T__reduce_init)
      {
        T__reduce_init[] = 0.00000000f
      }
      serial for (r0, 0, 4)
      {
        serial for (r1, 0, 8)
        {
          ScheduleBlock(T)
          {
            i0, i1 = axis.bind(r0, r1)
            T[] = (T[] + A[i0, i1])
          }
        }
      }
      ScheduleBlock(U)
      {
        U[] = (T[] * 0.500000000f)
      }
    }
  }
}
"""


def test_full_reduction() -> None:
    A = cp.placeholder((4, 8), "float32", "A")
    r0, r1 = cp.reduce_axis(4, "r0"), cp.reduce_axis(8, "r1")
    T = cp.compute((), lambda: cp.reduce_sum(A[r0, r1], [r0, r1]), "T")
    U = cp.compute((), lambda: T[()] * 0.5, "U")
    func = cp.lower("mean", [A, U])
    _check(func, FULL_REDUCTION)


HALF = """\
function half (_A, _B, _C, _D)
{
  ScheduleBlock(root)
  {
    {
      serial for (i, 0, 16)
      {
        ScheduleBlock(C)
        {
          i0 = axis.bind(i)
          C[i0] = (exp(A[i0]) * (float16)2.00000000f)
        }
      }
      serial for (i, 0, 16)
      {
        ScheduleBlock(D)
        {
          i0_0 = axis.bind(i)
          D[i0_0] = cinn_max(B[i0_0], (bfloat16)0.00000000f)
        }
      }
    }
  }
}
"""


def test_half() -> None:
    A = cp.placeholder((16,), "float16", "A")
    B = cp.placeholder((16,), "bfloat16", "B")
    C = cp.compute((16,), lambda i: cp.exp(A[i]) * 2, "C")
    D = cp.compute((16,), lambda i: cp.maximum(B[i], 0), "D")
    func = cp.lower("half", [A, B, C, D])
    _check(func, HALF)


INTS_BOOL = """\
function ints (_A, _M, _B, _C)
{
  ScheduleBlock(root)
  {
    {
      serial for (i, 0, 6)
      {
        ScheduleBlock(B)
        {
          i0 = axis.bind(i)
          B[i0] = select((M[i0] and (A[i0] > 0)), (A[i0] % 3), -1)
        }
      }
      serial for (i, 0, 6)
      {
        ScheduleBlock(C)
        {
          i0_0 = axis.bind(i)
          C[i0_0] = (float32(B[i0_0]) + float32(i0_0))
        }
      }
    }
  }
}
"""


def test_ints_bool() -> None:
    A = cp.placeholder((6,), "int32", "A")
    M = cp.placeholder((6,), "bool", "M")
    B = cp.compute((6,), lambda i: cp.select(M[i] & (A[i] > 0), A[i] % 3, -1), "B")
    C = cp.compute((6,), lambda i: cp.cast(B[i], "float32") + cp.cast(i, "float32"), "C")
    func = cp.lower("ints", [A, M, B, C])
    _check(func, INTS_BOOL)


SYMBOLIC_MIXED = """\
function sym (_X, _W, _Z, S)
{
  ScheduleBlock(root)
  {
    {
      serial for (i, 0ll, S)
      {
        ScheduleBlock(Y__reduce_init)
        {
          i0 = axis.bind(i)
          Y__reduce_init[i0] = 0.00000000f
        }
        serial for (k, 0ll, 4ll)
        {
          ScheduleBlock(Y)
          {
            i0_0, i1 = axis.bind(i, k)
            Y[i0_0] = (Y[i0_0] + (X[i0_0, i1] * W[i1]))
          }
        }
      }
      serial for (i, 0ll, (S * 2ll))
      {
        ScheduleBlock(Z)
        {
          i0_1 = axis.bind(i)
          Z[i0_1] = (Y[(i0_1 / 2ll)] + W[3ll])
        }
      }
    }
  }
}
"""


def test_symbolic_mixed() -> None:
    S = cp.sym("S")
    X = cp.placeholder((S, 4), "float32", "X")
    W = cp.placeholder((4,), "float32", "W")
    k = cp.reduce_axis(4, "k")
    Y = cp.compute((S,), lambda i: cp.reduce_sum(X[i, k] * W[k], [k]), "Y")
    Z = cp.compute((S * 2,), lambda i: Y[i / 2] + W[3], "Z")
    func = cp.lower("sym", [X, W, Z])
    _check(func, SYMBOLIC_MIXED)


RMS_NORM = """\
function rms_norm (_X, _Y, S)
{
  ScheduleBlock(root)
  {
    {
      serial for (i, 0ll, S)
      {
        ScheduleBlock(SS__reduce_init)
        {
          i0 = axis.bind(i)
          SS__reduce_init[i0] = 0.00000000f
        }
        serial for (k, 0ll, 768ll)
        {
          ScheduleBlock(SS)
          {
            i0_0, i1 = axis.bind(i, k)
            SS[i0_0] = (SS[i0_0] + (X[i0_0, i1] * X[i0_0, i1]))
          }
        }
      }
      serial for (i, 0ll, S)
      {
        serial for (j, 0ll, 768ll)
        {
          ScheduleBlock(Y)
          {
            i0_1, i1_0 = axis.bind(i, j)
            Y[i0_1, i1_0] = (X[i0_1, i1_0] * rsqrt(((SS[i0_1] / 768.000000f) + 1.00000000e-06f)))
          }
        }
      }
    }
  }
}
"""


def test_rms_norm() -> None:
    S = cp.sym("S")
    X = cp.placeholder((S, 768), "float32", "X")
    k = cp.reduce_axis(768, "k")
    SS = cp.compute((S,), lambda i: cp.reduce_sum(X[i, k] * X[i, k], [k]), "SS")
    Y = cp.compute((S, 768), lambda i, j: X[i, j] * cp.rsqrt(SS[i] / 768.0 + 1e-6), "Y")
    func = cp.lower("rms_norm", [X, Y])
    _check(func, RMS_NORM)


TWO_OUTPUTS = """\
function two (_A, _C, _B)
{
  ScheduleBlock(root)
  {
    {
      serial for (i, 0, 4)
      {
        ScheduleBlock(B)
        {
          i0 = axis.bind(i)
          B[i0] = (A[i0] + 1.00000000f)
        }
      }
      serial for (i, 0, 4)
      {
        ScheduleBlock(C)
        {
          i0_0 = axis.bind(i)
          C[i0_0] = (1.00000000f / (1.00000000f + exp(-(B[i0_0]))))
        }
      }
    }
  }
}
"""


def test_two_outputs() -> None:
    A = cp.placeholder((4,), "float32", "A")
    B = cp.compute((4,), lambda i: A[i] + 1, "B")
    C = cp.compute((4,), lambda i: cp.sigmoid(B[i]), "C")
    func = cp.lower("two", [A, C, B])
    _check(func, TWO_OUTPUTS)


REDUCTIONS = {
    "sum": """\
function reduce_sum (_A, _B)
{
  ScheduleBlock(root)
  {
    serial for (i, 0, 8)
    {
      ScheduleBlock(B__reduce_init)
      {
        i0 = axis.bind(i)
        B__reduce_init[i0] = 0.00000000f
      }
      serial for (k, 0, 16)
      {
        ScheduleBlock(B)
        {
          i0_0, i1 = axis.bind(i, k)
          B[i0_0] = (B[i0_0] + A[i0_0, i1])
        }
      }
    }
  }
}
""",
    "prod": """\
function reduce_prod (_A, _B)
{
  ScheduleBlock(root)
  {
    serial for (i, 0, 8)
    {
      ScheduleBlock(B__reduce_init)
      {
        i0 = axis.bind(i)
        B__reduce_init[i0] = 1
      }
      serial for (k, 0, 16)
      {
        ScheduleBlock(B)
        {
          i0_0, i1 = axis.bind(i, k)
          B[i0_0] = (B[i0_0] * A[i0_0, i1])
        }
      }
    }
  }
}
""",
    "max": """\
function reduce_max (_A, _B)
{
  ScheduleBlock(root)
  {
    serial for (i, 0, 8)
    {
      ScheduleBlock(B__reduce_init)
      {
        i0 = axis.bind(i)
        B__reduce_init[i0] = -inf
      }
      serial for (k, 0, 16)
      {
        ScheduleBlock(B)
        {
          i0_0, i1 = axis.bind(i, k)
          B[i0_0] = cinn_max(B[i0_0], A[i0_0, i1])
        }
      }
    }
  }
}
""",
    "min": """\
function reduce_min (_A, _B)
{
  ScheduleBlock(root)
  {
    serial for (i, 0, 8)
    {
      ScheduleBlock(B__reduce_init)
      {
        i0 = axis.bind(i)
        B__reduce_init[i0] = 9223372036854775807ll
      }
      serial for (k, 0, 16)
      {
        ScheduleBlock(B)
        {
          i0_0, i1 = axis.bind(i, k)
          B[i0_0] = cinn_min(B[i0_0], A[i0_0, i1])
        }
      }
    }
  }
}
""",
    "all": """\
function reduce_all (_A, _B)
{
  ScheduleBlock(root)
  {
    serial for (i, 0, 8)
    {
      ScheduleBlock(B__reduce_init)
      {
        i0 = axis.bind(i)
        B__reduce_init[i0] = true
      }
      serial for (k, 0, 16)
      {
        ScheduleBlock(B)
        {
          i0_0, i1 = axis.bind(i, k)
          B[i0_0] = (B[i0_0] and A[i0_0, i1])
        }
      }
    }
  }
}
""",
    "any": """\
function reduce_any (_A, _B)
{
  ScheduleBlock(root)
  {
    serial for (i, 0, 8)
    {
      ScheduleBlock(B__reduce_init)
      {
        i0 = axis.bind(i)
        B__reduce_init[i0] = false
      }
      serial for (k, 0, 16)
      {
        ScheduleBlock(B)
        {
          i0_0, i1 = axis.bind(i, k)
          B[i0_0] = (B[i0_0] or A[i0_0, i1])
        }
      }
    }
  }
}
""",
}


def test_every_reduction_kind() -> None:
    for kind, dtype in [("sum", "float32"), ("prod", "int32"), ("max", "float32"), ("min", "int64"),
                        ("all", "bool"), ("any", "bool")]:
        reset_name_ids()
        A = cp.placeholder((8, 16), dtype, "A")
        k = cp.reduce_axis(16, "k")
        fn = getattr(cp, f"reduce_{kind}")
        B = cp.compute((8,), lambda i: fn(A[i, k], k), "B")  # noqa: B023 - called immediately
        _check(cp.lower(f"reduce_{kind}", [A, B]), REDUCTIONS[kind])

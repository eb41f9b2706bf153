"""Golden lowering tests: the exact CINN text `lower` prints for each kind of compute.

Each expected string was read against CINN's rules (reference/cinn.md §1.5-1.7, ast_gen.cc):
serial loops over the default axis names, one ScheduleBlock per tensor with iter vars from
`unique_name("i<d>")`, reduce init blocks inside the spatial loops, int64 everywhere once a dim
is symbolic.
"""

from __future__ import annotations

from tests.lower import programs


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
    _check(programs.elementwise(), ELEMENTWISE)


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
    _check(programs.broadcast(), BROADCAST)


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
    _check(programs.multi_axis_keepdims(), MULTI_AXIS_KEEPDIMS)


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
    _check(programs.full_reduction(), FULL_REDUCTION)


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
    _check(programs.half(), HALF)


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
    _check(programs.ints_bool(), INTS_BOOL)


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
    _check(programs.symbolic_mixed(), SYMBOLIC_MIXED)


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
    _check(programs.rms_norm(), RMS_NORM)


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
    _check(programs.two_outputs(), TWO_OUTPUTS)


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
    for kind, func in programs.reductions().items():
        _check(func, REDUCTIONS[kind])

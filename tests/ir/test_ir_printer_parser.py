"""Golden printing of every node kind (exact CINN strings) and parsing them back, with and
without the decl header; inference defaults for hand-written text."""

from __future__ import annotations

import math

import pytest

from cinn_py import ir
from cinn_py.ir import dtype as dt
from cinn_py.ir.text.parser import parse_expr, parse_ir, parse_stmt

i, j = ir.Var("i"), ir.Var("j")
A = ir.make_tensor("A", (ir.IntImm(dt.int32, 32), ir.IntImm(dt.int32, 16)), dt.float32)
H = ir.make_tensor("H", (ir.IntImm(dt.int32, 8),), dt.float16, ir.MemoryType.GPU_SHARED)
S0 = ir.Var("S0", dt.int64, lower_bound=ir.IntImm(dt.int64, 1), is_symbolic_constant=True)

EXPRS = [
    (ir.IntImm(dt.int32, 7), "7"),
    (ir.IntImm(dt.int64, 7), "7ll"),
    (ir.IntImm(dt.int8, -7), "(int8_t)-7"),
    (ir.IntImm(dt.int16, 7), "(int16_t)7"),
    (ir.UIntImm(dt.uint64, 7), "7ull"),
    (ir.UIntImm(dt.uint8, 7), "(uint8_t)7"),
    (ir.UIntImm(dt.uint16, 7), "(uint16_t)7"),
    (ir.UIntImm(dt.uint32, 7), "7"),
    (ir.const(True), "true"),
    (ir.const(False), "false"),
    (ir.FloatImm(dt.float32, 2.0), "2.00000000f"),
    (ir.FloatImm(dt.float32, -0.5), "-0.500000000f"),
    (ir.FloatImm(dt.float16, 1.5), "(float16)1.50000000f"),
    (ir.FloatImm(dt.bfloat16, 1.5), "(bfloat16)1.50000000f"),
    (ir.FloatImm(dt.float64, 0.1), "0.10000000000000001"),
    (ir.FloatImm(dt.float16, math.inf), "cinn::common::raw_uint16_to_float16(0x7c00)"),
    (ir.FloatImm(dt.bfloat16, -math.inf), "cinn::common::raw_uint16_to_bfloat16(0xff80)"),
    (ir.FloatImm(dt.float32, math.inf), "inf"),
    (ir.FloatImm(dt.float32, math.nan), "nan"),
    (ir.StringImm('say "hi"'), '"say \\"hi\\""'),
    (i * 4 + j, "((i * 4) + j)"),
    (ir.Sub(i, ir.IntImm(dt.int32, -1)), "(i - -1)"),
    ((i // 2) % 3, "((i / 2) % 3)"),
    (ir.Min(i, j), "cinn_min(i, j)"),
    (ir.Max(i, ir.Minus(j)), "cinn_max(i, -(j))"),
    (ir.Not(ir.And(i < j, ir.ne(i, 0))), "!((i < j) and (i != 0))"),
    (ir.Or(i <= j, ir.eq(i, j)), "((i <= j) or (i == j))"),
    (ir.And(i > j, i >= j), "((i > j) and (i >= j))"),
    (ir.Cast(dt.float32, i), "float32(i)"),
    (ir.Select(i < j, ir.Load(A, (i, j)), ir.const(0.0)), "select((i < j), A[i, j], 0.00000000f)"),
    (ir.Call("exp", (ir.Load(A, (i, j)),), dt.float32), "exp(A[i, j])"),
    (ir.Reduce(ir.ReduceType.SUM, ir.Load(A, (i, j)), ir.const(0.0), (ir.Var("j", is_reduce_axis=True),)),
     "Reduce(sum, A[i, j],0.00000000f)"),
    (ir.Load(A, (i, ir.Ramp(j, ir.IntImm(dt.int32, 1), 4))), "A[i, Ramp(j,1,4)]"),
    (ir.Broadcast(ir.const(1.0), 4), "Broadcast(1.00000000f,4)"),
    (ir.Cast(dt.float32.with_lanes(4), ir.Broadcast(i, 4)), "float32<4>(Broadcast(i,4))"),
    (ir.Mul(S0, ir.IntImm(dt.int64, 2048)), "(S0 * 2048ll)"),
]


@pytest.mark.parametrize(("node", "text"), EXPRS, ids=[t for _, t in EXPRS])
def test_expr_prints_and_parses(node: ir.Expr, text: str) -> None:
    assert ir.print_ir(node) == text
    assert ir.structural_equal(parse_ir(ir.print_ir(node, decls=True)), node)


def _store(value: ir.Expr) -> ir.Store:
    return ir.Store(A, value, (i, j))


def _loop(kind: ir.ForType, body: ir.Stmt, offset: int = -1, factor: int = 0) -> ir.For:
    return ir.For(i, ir.IntImm(dt.int32, 0), ir.IntImm(dt.int32, 32), ir.Block((body,)), kind, offset, factor)


STMTS = [
    (_store(ir.const(1.0)), "A[i, j] = 1.00000000f"),
    (ir.Block((_store(ir.const(1.0)), _store(ir.const(2.0)))),
     "{\n  A[i, j] = 1.00000000f\n  A[i, j] = 2.00000000f\n}"),
    (_loop(ir.ForType.SERIAL, _store(ir.const(0.0))), "serial for (i, 0, 32)\n{\n  A[i, j] = 0.00000000f\n}"),
    (_loop(ir.ForType.PARALLEL, _store(ir.const(0.0))),
     "parallel for (i, 0, 32)\n{\n  A[i, j] = 0.00000000f\n}"),
    (_loop(ir.ForType.UNROLLED, _store(ir.const(0.0))),
     "unroll for (i, 0, 32)\n{\n  A[i, j] = 0.00000000f\n}"),
    (_loop(ir.ForType.DEFAULT, _store(ir.const(0.0))),
     "default for (i, 0, 32)\n{\n  A[i, j] = 0.00000000f\n}"),
    (_loop(ir.ForType.VECTORIZED, _store(ir.const(0.0)), factor=4),
     "vectorize[4] for (i, 0, 32)\n{\n  A[i, j] = 0.00000000f\n}"),
    (_loop(ir.ForType.GPU_BLOCK, _store(ir.const(0.0)), offset=0),
     "thread_bind[blockIdx.x] for (i, 0, 32)\n{\n  A[i, j] = 0.00000000f\n}"),
    (_loop(ir.ForType.GPU_THREAD, _store(ir.const(0.0)), offset=1),
     "thread_bind[threadIdx.y] for (i, 0, 32)\n{\n  A[i, j] = 0.00000000f\n}"),
    (ir.IfThenElse(i < 4, ir.Block((_store(ir.const(1.0)),)), ir.Block((_store(ir.const(2.0)),))),
     "if ((i < 4)) {\n  A[i, j] = 1.00000000f\n} else {\n  A[i, j] = 2.00000000f\n}"),
    (ir.IfThenElse(i < 4, ir.Block((_store(ir.const(1.0)),))), "if ((i < 4)) {\n  A[i, j] = 1.00000000f\n}"),
    (ir.Let(ir.Var("x", dt.float32), ir.const(1.0)), "float32 x = 1.00000000f"),
    (ir.Let(ir.Var("n", dt.int64)), "int64 n"),
    (ir.Evaluate(ir.Call("__syncthreads", (), dt.int32, ir.CallType.INTRINSIC)), "__syncthreads()"),
    (ir.Alloc(H.buffer, (ir.IntImm(dt.int32, 8),)), "alloc(_H, 8)"),
    (ir.Free(H.buffer), "free(_H)"),
    (ir.ScheduleBlockRealize((i, j), ir.ScheduleBlock(
        "B", (ir.Var("i0"), ir.Var("i1", is_reduce_axis=True)), _store(ir.const(1.0)),
        (ir.BufferRange(A, ((i, ir.IntImm(dt.int32, 1)), (ir.IntImm(dt.int32, 0), ir.IntImm(dt.int32, 16)))),
         ),
        (ir.BufferRange(H, ((j, ir.IntImm(dt.int32, 1)),)),),
        (("k1", 64), ("k2", True), ("k3", 2.0), ("k4", "v4")), ir.ReduceMethod.WARP)),
     "ScheduleBlock(B)\n{\n  i0, i1 = axis.bind(i, j)\n  read_buffers(A[i:1, 0:16])\n"
     "  write_buffers(H[j:1])\n  attrs(k1:64, k2:1, k3:2, k4:v4)\n  A[i, j] = 1.00000000f\n}"),
]


@pytest.mark.parametrize(("node", "text"), STMTS, ids=[t.split("\n")[0] for _, t in STMTS])
def test_stmt_prints_and_parses(node: ir.Stmt, text: str) -> None:
    assert ir.print_ir(node) == text
    with_decls = ir.print_ir(node, decls=True)
    assert with_decls.endswith(text)
    parsed = parse_ir(with_decls)
    assert ir.structural_equal(parsed, node)
    assert ir.print_ir(parsed, decls=True) == with_decls


def test_decl_header_carries_what_cinn_omits() -> None:
    block = STMTS[-1][0]
    header = ir.print_ir(block, decls=True).split("ScheduleBlock(B)")[0]
    assert header == ("// decl var i1 : int32 reduce\n"
                      "// decl tensor A : float32[32, 16] global\n"
                      "// decl tensor H : float16[8] shared\n"
                      "// decl block #0 B reduce_method=WarpReduceMethod\n"
                      "// decl attr #0 B k2 = true\n"
                      "// decl attr #0 B k3 = 2.0\n")


def _dyn_func() -> ir.LoweredFunc:
    X = ir.make_tensor("X", (S0, ir.IntImm(dt.int64, 4)), dt.float16)
    Y = ir.make_tensor("Y", (S0,), dt.float32)
    init = ir.Tensor("Y__reduce_init", Y.shape, dt.float32, Y.buffer)
    a, k = ir.Var("i", dt.int64), ir.Var("k", dt.int64, is_reduce_axis=True)
    i0, i1 = ir.Var("i0", dt.int64), ir.Var("i1", dt.int64, is_reduce_axis=True)
    zero, four = ir.IntImm(dt.int64, 0), ir.IntImm(dt.int64, 4)
    init_blk = ir.ScheduleBlockRealize((a,), ir.ScheduleBlock(
        "Y__reduce_init", (i0,), ir.Store(init, ir.const(0.0), (i0,))))
    upd = ir.ScheduleBlockRealize((a, k), ir.ScheduleBlock("Y", (i0, i1), ir.Store(
        Y, ir.Add(ir.Load(Y, (i0,)), ir.Cast(dt.float32, ir.Load(X, (i0, i1)))), (i0,))))
    loop = ir.For(a, zero, S0, ir.Block((init_blk, ir.For(k, zero, four, ir.Block((upd,))))))
    root = ir.ScheduleBlockRealize((), ir.ScheduleBlock("root", (), loop))
    args = (ir.Argument(ir.ArgIO.INPUT, tensor=X), ir.Argument(ir.ArgIO.OUTPUT, tensor=Y),
            ir.Argument(ir.ArgIO.SCALAR, var=S0))
    return ir.LoweredFunc("reduce_fn", args, ir.Block((root,)))


def test_function_and_module_roundtrip() -> None:
    fn = _dyn_func()
    text = ir.print_ir(fn, decls=True)
    assert text.startswith("// decl func reduce_fn(input X, output Y, scalar S0)\n"
                           "// decl var S0 : int64 symbolic lower=1ll\n"
                           "// decl var i : int64\n")
    assert "// decl tensor Y__reduce_init : float32[S0] buffer _Y global\n" in text
    assert "function reduce_fn (_X, _Y, S0)\n{\n  ScheduleBlock(root)\n" in text
    assert ir.structural_equal(parse_ir(text), fn)
    module = ir.Module("m", (fn, fn))
    assert ir.print_ir(module).startswith("Module m {\n\nfunction reduce_fn (_X, _Y, S0)")
    assert ir.structural_equal(parse_ir(ir.print_ir(module, decls=True)), module)


def test_inference_defaults_without_header() -> None:
    fn = _dyn_func()
    parsed = parse_ir(ir.print_ir(fn))
    assert isinstance(parsed, ir.LoweredFunc)
    assert [(a.io, a.name) for a in parsed.args] == [(ir.ArgIO.INPUT, "_X"), (ir.ArgIO.OUTPUT, "_Y"),
                                                     (ir.ArgIO.SCALAR, "S0")]
    x, y = parsed.args[0].tensor, parsed.args[1].tensor
    assert x is not None and y is not None
    assert ir.print_ir(ir.Block(x.shape)) != ""  # shapes are printable
    assert [ir.print_ir(d) for d in x.shape] == ["S0", "4ll"]
    assert x.dtype == dt.float32 and y.buffer.name == "_Y"
    loop = parsed.body.stmts[0].schedule_block.body  # type: ignore[attr-defined]
    assert loop.loop_var.dtype == dt.int64  # from the `0ll` min
    assert parsed.scalar_args[0].is_symbolic_constant
    assert ir.print_ir(parsed) == ir.print_ir(fn)


def test_compact_one_line_input() -> None:
    text = ("function fn (_A, _B) { ScheduleBlock(root) { serial for (i, 0, 32) { serial for (j, 0, 16) "
            "{ ScheduleBlock(B) { i0, i1 = axis.bind(i, j) B[i0, i1] = (A[i0, i1] * 2.00000000f) } } } } }")
    fn = parse_ir(text)
    assert isinstance(fn, ir.LoweredFunc)
    assert [ir.print_ir(d) for d in fn.args[0].tensor.shape] == ["32", "16"]  # type: ignore[union-attr]
    assert "          i0, i1 = axis.bind(i, j)\n" in ir.print_ir(fn)
    assert ir.print_ir(parse_ir(ir.print_ir(fn))) == ir.print_ir(fn)


def test_c_precedence_and_aliases() -> None:
    assert ir.print_ir(parse_expr("i * 4 + j % 2 < 8 && !(j == 1) || i >= 3")) == \
        "(((((i * 4) + (j % 2)) < 8) and !(j == 1)) or (i >= 3))"
    assert ir.structural_equal(parse_expr("-(i)"), ir.Minus(i))
    assert ir.structural_equal(parse_expr("-5"), ir.IntImm(dt.int32, -5))


def test_evaluate_root_needs_stmt_decl() -> None:
    ev = STMTS[13][0]
    assert isinstance(parse_ir(ir.print_ir(ev)), ir.Call)
    assert isinstance(parse_ir(ir.print_ir(ev, decls=True)), ir.Evaluate)
    assert isinstance(parse_stmt("__syncthreads()"), ir.Evaluate)


def test_ambiguous_literals_get_decls() -> None:
    e = ir.Add(ir.Var("u", dt.uint32), ir.UIntImm(dt.uint32, 7))
    text = ir.print_ir(e, decls=True)
    assert "// decl literal #0 : uint32 = 7\n" in text
    assert ir.structural_equal(parse_ir(text), e)
    f = ir.FloatImm(dt.float32, 0.1234567891234)  # 9 printed digits lose the value
    assert ir.print_ir(f, decls=True) == "// decl literal #0 : float32 = 0.1234567891234\n0.123456789f"
    assert parse_ir("0.123456789f") != f and parse_ir(ir.print_ir(f, decls=True)) == f


def test_shared_buffer_views_roundtrip() -> None:
    # `C__reduce_init` is seen first but `C` defines the buffer `_C` (another shape).
    C = ir.make_tensor("C", (ir.IntImm(dt.int32, 8), ir.IntImm(dt.int32, 4)), dt.float32)
    init = ir.Tensor("C__reduce_init", (ir.IntImm(dt.int32, 8),), dt.float32, C.buffer)
    body = ir.Block((ir.Store(init, ir.const(0.0), (i,)), ir.Store(C, ir.Load(C, (i, j)), (i, j))))
    text = ir.print_ir(body, decls=True)
    assert text.index("tensor C :") < text.index("tensor C__reduce_init :")
    back = parse_ir(text)
    assert ir.structural_equal(back, body)
    assert back.stmts[0].tensor.buffer is back.stmts[1].tensor.buffer  # type: ignore[attr-defined]


def test_handwritten_scheduled_ir_roundtrips() -> None:
    from pathlib import Path

    from cinn_py.tools.testing.golden import assert_roundtrip

    path = Path(__file__).resolve().parents[1] / "golden" / "schedules" / "seed_walkthrough.ir"
    if not path.exists():
        pytest.skip("seed_walkthrough.ir is not in this checkout")
    text = path.read_text().rstrip("\n")
    fn = parse_ir(text)
    assert ir.print_ir(fn) == text
    assert_roundtrip(fn)

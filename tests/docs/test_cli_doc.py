"""docs/cli.md covers the whole command line: every subcommand, option and choice of
`cinn_py.cli.build_parser()` is documented, and the page's claims about `bench` hold. (pytest
runs the page's examples as a doctest.)"""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path

import pytest

from cinn_py import cli

CLI_MD = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _documented_tokens(sub: argparse.ArgumentParser) -> list[str]:
    tokens = []
    for action in sub._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        tokens += [s for s in action.option_strings if s.startswith("--")]
        tokens += [str(c) for c in action.choices or ()]
    return tokens


def test_every_subcommand_has_a_section() -> None:
    text = CLI_MD.read_text()
    for name in _subparsers():
        assert f"## `{name}`" in text, f"docs/cli.md has no section for `cinn-py {name}`"


@pytest.mark.parametrize("name", sorted(_subparsers()))
def test_every_option_and_choice_is_documented(name: str) -> None:
    text = CLI_MD.read_text()
    section = text.split(f"## `{name}`", 1)[1].split("\n## ", 1)[0]
    missing = [t for t in _documented_tokens(_subparsers()[name]) if t not in section]
    assert not missing, f"docs/cli.md does not document {missing} of `cinn-py {name}`"


def test_global_debug_option_is_documented() -> None:
    assert "`--debug`" in CLI_MD.read_text()


def test_bench_columns_and_workloads_match_the_doc() -> None:
    """The workload names and column names the page lists are the benchmark's own (tiny shapes,
    a fraction of a second)."""
    from cinn_py.tools import bench
    from cinn_py.tools.bench_workloads import WORKLOADS

    text = CLI_MD.read_text()
    section = text.split("## `bench`", 1)[1].split("\n## ", 1)[0]
    for workload in WORKLOADS:
        assert f"`{workload}`" in section
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = bench.main(["relu", "--tiny", "--repeat", "2"])
    assert not status
    header = next(line for line in out.getvalue().splitlines() if line.startswith("workload"))
    for column in ("BW@run", "% BW"):
        assert column in header and f"`{column}`" in section


def test_dump_ir_output_parses_back_to_the_same_function(tmp_path: Path) -> None:
    """The page says `dump-ir --decls` output is a `.ir` file the parser reads back."""
    import cinn_py as cp
    from cinn_py.ir import reset_name_ids, structural_equal
    from cinn_py.ir.text.parser import parse_ir
    from cinn_py.lowering import lower

    N = cp.sym("N")
    X = cp.placeholder((N, 8), "float32", "X")
    Y = cp.compute((N, 8), lambda i, j: X[i, j] + 1.0, "Y")
    script = tmp_path / "p.py"
    script.write_text("import cinn_py as cp\nN = cp.sym('N')\nX = cp.placeholder((N, 8), 'float32', 'X')\n"
                      "Y = cp.compute((N, 8), lambda i, j: X[i, j] + 1.0, 'Y')\nargs = [X, Y]\n")
    out = io.StringIO()
    reset_name_ids()
    with contextlib.redirect_stdout(out):
        assert cli.main(["dump-ir", str(script), "--decls"]) == 0
    reset_name_ids()
    assert structural_equal(parse_ir(out.getvalue()), lower("p", [X, Y]))


def test_top_level_help_prints() -> None:
    """`--help` of every subcommand formats (a bare '%' in a help string once broke it)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    assert "dump-ir" in out.getvalue()
    for command in ("dump-ir", "codegen", "run", "bench", "demo"):
        with contextlib.redirect_stdout(io.StringIO()), pytest.raises(SystemExit) as exit_info:
            cli.main([command, "--help"])
        assert exit_info.value.code == 0

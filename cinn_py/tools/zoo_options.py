"""The model zoo's names and command-line options, without importing torch (`cinn-py bench`
builds its parser from these whether or not torch is installed)."""

from __future__ import annotations

from typing import Any

SIZES = ("tiny", "small", "base")
MODES = ("infer", "train")
DTYPES = ("fp32", "bf16")
VARIANTS = ("eager", "inductor", "cinn_py")
MODELS = ("resnet", "mobilenet", "bert", "gpt2", "llama", "transformer")


def add_zoo_arguments(parser: Any) -> Any:
    """--size, --modes, --dtypes, --variants on `parser` (an ArgumentParser or an argument group)."""
    parser.add_argument("--size", choices=SIZES, default="small",
                        help="model and input sizes (default small)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated: {', '.join(MODES)} "
                        "(default all)")
    parser.add_argument("--dtypes", default=",".join(DTYPES), help=f"comma-separated: {', '.join(DTYPES)} "
                        "(bf16: torch.autocast on the CPU; default all)")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"comma-separated: {', '.join(VARIANTS)} "
                        "(default all; eager always runs: it is the reference)")
    return parser

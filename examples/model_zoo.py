"""The model zoo benchmark: six real architectures (ResNet, MobileNetV2, BERT, GPT-2, Llama, a
plain TransformerEncoderLayer; random init, no downloads) through eager PyTorch, Inductor and
`torch.compile(backend="cinn_py")`, inference and one training step, fp32 and bf16 autocast.

    python examples/model_zoo.py [--models resnet,bert] [--size tiny|small|base] [--modes infer,train]
                                 [--dtypes fp32,bf16] [--repeat 10] [--threads 2] [--json FILE] [--plot
                                 FILE.png]

Prints per case the median step time of each variant, cinn_py's speed-up, correctness (outputs and
every parameter gradient against eager), the share of ATen ops cinn-py converted and the compile
seconds, with the load average. The same as `cinn-py bench --models`; see cinn_py/tools/zoo.py.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Before torch is imported (cinn_py.tools.zoo imports it): spinning OpenMP workers would make
# eager and Inductor up to 10x slower on a shared machine.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# This checkout's cinn_py, not whichever one is installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cinn_py.tools.zoo_report import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

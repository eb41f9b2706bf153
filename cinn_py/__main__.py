"""`python -m cinn_py` runs the `cinn-py` command line."""

import sys

from cinn_py.cli import main

sys.exit(main())

"""`python -m cinn_py.tools.cinn_cases`: see `cinn_py.tools.cinn_cases.harness`."""

import sys

from cinn_py.tools.cinn_cases.harness import main

sys.exit(main())

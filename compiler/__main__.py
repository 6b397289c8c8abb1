"""`python -m relaylens.compiler`: the same as the `relaylens` console script."""

import sys

from .cli import main

sys.exit(main())

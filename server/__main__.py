"""`python -m relaylens.server`: the language server on stdio."""

import sys

from .server import serve

sys.exit(serve())

"""`python -m relaylens.server`: the language server on stdio."""

from .server import serve

serve()

"""RelayLens's release, in one place: pyproject.toml reads it (`dynamic = ["version"]`),
so the installed package's version is this, and the code that names its own version
(`relaylens --version`, the disk cache's keys: lower/cache_keys.py) reads it here rather
than through importlib.metadata, whose import (zipfile, csv, email...) and look-up of
the installed distribution cost a process 25-40 ms of CPU, more than a quarter of a
GPT-2 block built before in another process.
"""

RELEASE = "0.1.0"

"""The saved parser (compiler/parser/grammar.py): Lark's tables built once, loaded by
later processes, parse exactly as the tables built from relay.lark.

Every `.relay` file of the repository and of the corpus is parsed by a parser built
from the grammar and by one loaded from the cache file, both with Lark itself and with
the fast driver; the trees are the same.  A damaged cache file, or a cache directory
that cannot be written, only means the tables are built.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

from lark import Lark

from relaylens.compiler.parser import grammar as G
from relaylens.compiler.parser.lalr_driver import LalrDriver, NotTaken
from test_lalr_driver import FILES, same


def _text() -> str:
    return resources.files("relaylens.grammar").joinpath("relay.lark").read_text()


def test_a_loaded_parser_parses_as_the_built_one(tmp_path, monkeypatch):
    monkeypatch.setenv(G.CACHE_ENV, str(tmp_path))
    path = G.cache_path(_text())
    assert path.parent == tmp_path
    built = Lark(_text(), **G.OPTIONS)
    G._save(built, path)
    assert path.exists() and not list(tmp_path.glob("*.tmp"))
    loaded = G._load(path)
    assert loaded is not None and loaded is not built
    fast_built, fast_loaded = LalrDriver(built), LalrDriver(loaded)
    assert len(FILES) > 10
    for file in FILES:
        text = file.read_text()
        try:
            expected = built.parse(text, start="item")
        except Exception:  # noqa: BLE001 -- files with syntax errors: both raise
            expected = None
        if expected is None:
            continue
        same(expected, loaded.parse(text, start="item"), file.name)
        try:
            same(expected, fast_loaded.parse(text, "item"), file.name)
            same(expected, fast_built.parse(text, "item"), file.name)
        except NotTaken:
            pass  # the driver hands some inputs to Lark: the same for both tables


def test_the_key_names_the_grammar(tmp_path, monkeypatch):
    monkeypatch.setenv(G.CACHE_ENV, str(tmp_path))
    assert G.cache_path(_text()) != G.cache_path(_text() + "\n// another rule\n")
    monkeypatch.setenv(G.CACHE_ENV, "-")
    assert G.cache_path(_text()) is None


def test_a_damaged_file_is_not_loaded(tmp_path, monkeypatch):
    monkeypatch.setenv(G.CACHE_ENV, str(tmp_path))
    path = G.cache_path(_text())
    path.write_bytes(b"not a pickle")
    assert G._load(path) is None


def _fresh_process(env: dict) -> str:
    code = ("from relaylens.compiler.parser.parse import parse\n"
            "r = parse('def @main(%x: Tensor[(2), float32]) { add(%x, %x) }', 'x.relay')\n"
            "print('main' in [g.name for g in r.module.functions])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_processes_write_then_read_the_cache(tmp_path):
    env = {**os.environ, G.CACHE_ENV: str(tmp_path / "grammar")}
    assert _fresh_process(env) == "True"  # builds and saves
    saved = list((tmp_path / "grammar").glob("relay-*.lark"))
    assert len(saved) == 1
    stamp = saved[0].stat().st_mtime_ns
    assert _fresh_process(env) == "True"  # loads
    assert saved[0].stat().st_mtime_ns == stamp


def test_an_unwritable_directory_still_parses(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    env = {**os.environ, G.CACHE_ENV: str(blocker / "grammar")}  # under a file: mkdir fails
    assert _fresh_process(env) == "True"

"""Write the kept seed corpora and the libFuzzer dictionary (run again to refresh them).

    python tests/fuzz/make_seeds.py [--corpus /work/shared/corpus/relay]

- corpus/parse, corpus/check: every corpus file of at most SMALL bytes, as it is;
- corpus/passes: those of them that check without errors (the pipeline runs only on them),
  and for each operator a small program that calls it on a parameter and on constants
  (`op-NAME.relay`, kept when it type-checks), so FoldConstant and FuseOps meet every op;
- corpus/recheck: `old NUL new` pairs (target_recheck): a corpus file of at most
  SMALL_EDITED bytes and the same with one small edit in a statement (a space, a
  character deleted, a digit changed), two per file;
- corpus/lsp: editor sessions (lsp_frames): a corpus file opened, then requests of every
  method the server registers at places in it, an edit, a close; and a few framing cases;
- relay.dict: the literals of grammar/relay.lark, the operator names and attribute names.

The coverage-guided runs add to these only through `run.py --keep` (libFuzzer -merge=1,
which keeps an input only if it adds coverage).  corpus-sources.tsv names where each
corpus file came from and its licence (the corpus's SOURCES.tsv rows).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SMALL = 2000
SMALL_EDITED = 1000
SESSIONS = 16  # corpus files turned into LSP sessions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent.parent / "shared" / "corpus" / "relay")
    args = parser.parse_args()
    sys.path[:0] = [str(HERE)]
    from relaylens.compiler.check import check_text

    small = sorted(p for p in args.corpus.glob("*.relay") if p.stat().st_size <= SMALL)
    typed = [p for p in small if not any(d.is_error for d in check_text(p.read_text(), p.name).diagnostics)]
    for target, files in (("parse", small), ("check", small), ("passes", typed)):
        _write(HERE / "corpus" / target, {p.name: p.read_bytes() for p in files})
    ops = _op_programs(check_text)
    for name, text in ops.items():
        (HERE / "corpus" / "passes" / name).write_text(text)
    _write(HERE / "corpus" / "recheck", _edits([p for p in small if p.stat().st_size <= SMALL_EDITED]))
    _write(HERE / "corpus" / "lsp", _sessions(small[:: max(1, len(small) // SESSIONS)][:SESSIONS]))
    rows = (args.corpus / "SOURCES.tsv").read_text().splitlines()
    names = {p.name for p in small}
    (HERE / "corpus-sources.tsv").write_text("\n".join([rows[0], *(r for r in rows[1:] if r.split("\t")[0] in names)]) + "\n")
    (HERE / "relay.dict").write_text(_dictionary())
    print(f"{len(small)} parse/check seeds, {len(typed)} + {len(ops)} passes seeds, {SESSIONS} lsp sessions")
    print(f"{len(list((HERE / 'corpus' / 'recheck').iterdir()))} recheck pairs")


def _write(folder: Path, files: dict[str, bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    for name, data in files.items():
        (folder / name).write_bytes(data)


def _edits(files: list[Path]) -> dict[str, bytes]:
    pairs = {}
    for path in files:
        old = path.read_text()
        lines = old.split("\n")
        statements = [i for i, line in enumerate(lines) if re.match(r"\s*(%\w+ = |let )", line)]
        if not statements:
            continue
        i = statements[len(statements) // 2]
        line = lines[i]
        cut = line.rfind(")") if ")" in line else len(line) - 1
        digit = re.search(r"\d", line.split("=", 1)[-1])
        edits = {"space": line.replace("(", "( ", 1),
                 "cut": line[:cut] + line[cut + 1:],
                 "digit": line if digit is None else line[:len(line) - len(line.split("=", 1)[-1]) + digit.start()]
                 + str((int(digit.group()) + 1) % 10) + line[len(line) - len(line.split("=", 1)[-1]) + digit.end():]}
        for kind in ("space", "cut") if len(pairs) % 2 else ("space", "digit"):
            new = "\n".join([*lines[:i], edits[kind], *lines[i + 1:]])
            pairs[f"{path.stem}-{kind}"] = old.encode() + b"\0" + new.encode()
    return pairs


def _sessions(files: list[Path]) -> dict[str, bytes]:
    from lsp_frames import frame

    sessions = {}
    for n, path in enumerate(files):
        text = path.read_text()
        uri = f"file:///fuzz/{path.name}"
        doc = {"uri": uri}
        lines = text.split("\n")
        spots = [(i, m.start()) for i, line in enumerate(lines) for m in re.finditer(r"[%@][\w.]+|\b[a-z_.]+\(", line)]
        spot = spots[len(spots) // 2] if spots else (0, 0)
        pos = {"line": spot[0], "character": spot[1]}
        rng = {"start": pos, "end": {"line": spot[0], "character": spot[1] + 1}}
        requests = [
            ("textDocument/hover", {"textDocument": doc, "position": pos}),
            ("textDocument/definition", {"textDocument": doc, "position": pos}),
            ("textDocument/declaration", {"textDocument": doc, "position": pos}),
            ("textDocument/references", {"textDocument": doc, "position": pos, "context": {"includeDeclaration": True}}),
            ("textDocument/documentHighlight", {"textDocument": doc, "position": pos}),
            ("textDocument/completion", {"textDocument": doc, "position": pos}),
            ("textDocument/signatureHelp", {"textDocument": doc, "position": pos}),
            ("textDocument/prepareRename", {"textDocument": doc, "position": pos}),
            ("textDocument/rename", {"textDocument": doc, "position": pos, "newName": "%renamed"}),
            ("textDocument/documentSymbol", {"textDocument": doc}),
            ("textDocument/semanticTokens/full", {"textDocument": doc}),
            ("textDocument/foldingRange", {"textDocument": doc}),
            ("textDocument/formatting", {"textDocument": doc, "options": {"tabSize": 2, "insertSpaces": True}}),
            ("textDocument/codeLens", {"textDocument": doc}),
            ("relaylens/status", None),
            ("relaylens/lineMap", {"uri": uri}),
            ("relaylens/snapshots", {"uri": uri}),
            ("relaylens/virtualDocument", {"uri": f"relaylens:/pass/0-input.relay?uri={uri}&version=1"}),
        ]
        # each session: open, a third of the requests (all of them over the sessions), an edit, more, close
        mine = requests[n % 3::3]
        messages = [{"jsonrpc": "2.0", "method": "textDocument/didOpen",
                     "params": {"textDocument": {**doc, "languageId": "relay", "version": 1, "text": text}}}]
        messages += [{"jsonrpc": "2.0", "id": i + 1, "method": m, **({"params": p} if p is not None else {})}
                     for i, (m, p) in enumerate(mine)]
        messages.append({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {**doc, "version": 2}, "contentChanges": [{"range": rng, "text": ")"}]}})
        messages += [{"jsonrpc": "2.0", "id": 100 + i, "method": m, **({"params": p} if p is not None else {})}
                     for i, (m, p) in enumerate(mine[:2])]
        messages.append({"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {"textDocument": doc}})
        sessions[f"session-{path.stem}"] = b"".join(frame(m) for m in messages)
    hover = {"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover",
             "params": {"textDocument": {"uri": "file:///fuzz/probe.relay"}, "position": {"line": 1, "character": 8}}}
    sessions["framing-content-type"] = (b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
                                        + frame(hover))
    sessions["framing-not-json"] = frame(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\":")
    sessions["framing-truncated"] = frame(hover)[:-5]
    sessions["framing-bad-params"] = frame({**hover, "params": {"textDocument": {}, "position": {"line": -1}}})
    sessions["framing-batch"] = frame(json.dumps([hover, hover]).encode())
    # found by the lsp fuzzer: a request whose id is not a number or string, refused by the
    # server, breaks pygls's answer (unhashable id); the server must go on
    sessions["request-id-a-list"] = frame({"jsonrpc": "2.0", "id": [], "method": "relaylens/snapshots",
                                           "params": {"uri": 9007199254740993}})
    return sessions


# (type, dtype, shape) of the parameter %x and of the constants, tried in turn
OPERANDS = [("(1, 4, 4, 4)", "float32", "[1, 4, 4, 4]"), ("(4, 4)", "float32", "[4, 4]"), ("(4,)", "float32", "[4]"),
            ("(1, 4, 4, 4, 4)", "float32", "[1, 4, 4, 4, 4]"), ("(4, 4)", "int32", "[4, 4]"), ("(4, 4)", "bool", "[4, 4]"),
            ("(1, 4, 4)", "float32", "[1, 4, 4]")]
# attributes an op needs before it type-checks
REQUIRED_ATTRS = {
    "broadcast_to": "shape=[2, 4, 4]", "cast": 'dtype="int32"', "clip": "a_min=0f, a_max=1f", "expand_dims": "axis=0",
    "reshape": "newshape=[-1]", "reverse": "axis=0", "tile": "reps=[2, 1]", "repeat": "repeats=2, axis=0",
    "split": "indices_or_sections=2", "nn.max_pool1d": "pool_size=[2]", "nn.max_pool2d": "pool_size=[2, 2]",
    "nn.max_pool3d": "pool_size=[2, 2, 2]", "nn.avg_pool1d": "pool_size=[2]", "nn.avg_pool2d": "pool_size=[2, 2]",
    "nn.avg_pool3d": "pool_size=[2, 2, 2]", "nn.upsampling": "scale_h=2f, scale_w=2f", "nn.l2_normalize": "eps=1e-05f",
    "image.resize2d": "size=[8, 8]", "layout_transform": 'src_layout="NCHW", dst_layout="NHWC"',
    "sliding_window": "axis=0, window_shape=[2], strides=[1]",
}


def _op_programs(check_text) -> dict[str, str]:
    from relaylens.compiler.ops.registry import all_ops
    import relaylens.compiler.ops  # noqa: F401 -- registers the ops

    found = {}
    for op in all_ops():
        if op.inputs is None or op.name.startswith(("vm.", "memory.", "qnn.")):
            continue
        for ty, dtype, shape in OPERANDS:
            const = f'ones(shape={shape}, dtype="{dtype}")'
            args = ["(%x, %x)", f"({const}, {const})"] if op.tuple_input else [
                ", ".join(["%x"] * len(op.inputs)), ", ".join([const] * len(op.inputs))]
            if op.name in REQUIRED_ATTRS:
                args = [f"{a}, {REQUIRED_ATTRS[op.name]}" for a in args]
            text = (f'#[version = "0.0.5"]\ndef @main(%x: Tensor[{ty}, {dtype}]) {{\n  %0 = {op.name}({args[0]});\n'
                    f"  %1 = {op.name}({args[1]});\n  (%0, %1)\n}}\n")
            if not any(d.is_error for d in check_text(text).diagnostics):
                found[f"op-{op.name}.relay"] = text
                break
    return found


def _dictionary() -> str:
    from relaylens.compiler.ops.registry import all_ops
    import relaylens.compiler.ops  # noqa: F401 -- registers the ops

    grammar = (ROOT / "grammar" / "relay.lark").read_text()
    words = {w for w in re.findall(r'"([^"\\\s]+)"', grammar) if "(?:" not in w}
    words |= {op.name for op in all_ops()} | {f"{a.name}=" for op in all_ops() for a in op.attrs}
    words |= {"float32", "float16", "int64", "int32", "int8", "uint8", "bool", "meta[relay.Constant][0]",
              "#[version = \"0.0.5\"]", "#[metadata]", "/* ty=", "span=", "*/", "%0", "@main", "Primitive=1",
              "match", "Cons", "Nil", "Tensor[(", ")]"}
    lines = ["# libFuzzer dictionary for Relay text (make_seeds.py: grammar literals, op and attribute names)"]
    for word in sorted(words):
        escaped = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else
                          "".join(f"\\x{b:02x}" for b in c.encode()) for c in word)
        lines.append(f'"{escaped}"')
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()

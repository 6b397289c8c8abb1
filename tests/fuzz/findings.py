"""What a fuzzer found, named so that the same bug found twice has one name.

    signature(exc) -> str            "RecursionError in compiler/typing/infer.py:visit_call"
    known_signatures(target, check) -> set   the signatures of the kept crash inputs that still crash

A signature is the exception's type and the innermost frame of RelayLens's own code
(compiler/ or server/) it passed through, or, for a property the harness checks itself
(an `InvariantBroken`), the property's name.  The fuzzer skips inputs whose signature is
already kept under crashes/<target>/ (so a short run looks for new bugs, not the known
ones); the replay test in tests/test_fuzz.py keeps the known ones failing visibly.
"""

from __future__ import annotations

import traceback
from pathlib import Path

FUZZ_DIR = Path(__file__).resolve().parent
CRASHES = FUZZ_DIR / "crashes"
PACKAGE_DIRS = tuple(str(FUZZ_DIR.parents[1] / d) for d in ("compiler", "server"))
# RelayLens frames that only hand a message on to pygls (RelayLensProtocol): an exception
# whose only RelayLens frames are these was raised by pygls about a malformed message.
PASS_THROUGH = {("server/server.py", "handle_message"), ("server/server.py", "structure_message")}


class InvariantBroken(AssertionError):
    """A property the harness checks failed; `key` names the property (the signature)."""

    def __init__(self, key: str, detail: str) -> None:
        super().__init__(f"{key}: {detail}")
        self.key = key


def own_frame(exc: BaseException) -> str | None:
    """`file:function` of the innermost RelayLens frame of `exc`'s traceback (or of the
    exceptions it was raised `from`), relative to the checkout; None if it never ran ours
    (PASS_THROUGH frames aside)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        frames = [(str(Path(f.filename).relative_to(FUZZ_DIR.parents[1])), f.name)
                  for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(PACKAGE_DIRS)]
        frames = [f for f in frames if f not in PASS_THROUGH]
        if frames:
            return ":".join(frames[-1])
        exc = exc.__cause__  # not __context__: an exception pygls raises while handling
        # one of ours on purpose (a Refused answer) is pygls's, and ours was logged on its own
    return None


def signature(exc: BaseException) -> str:
    if isinstance(exc, InvariantBroken):
        return f"invariant {exc.key}"
    where = own_frame(exc)
    return f"{type(exc).__name__} in {where}" if where else f"{type(exc).__name__} outside RelayLens"


def crash_inputs(target: str) -> list[Path]:
    folder = CRASHES / target
    return sorted(p for p in folder.glob("*") if p.is_file() and not p.name.startswith(".")) if folder.is_dir() else []


def is_resource_finding(path: Path) -> bool:
    """A kept input named as libFuzzer names a hang or a runaway (timeout-*, oom-*): it is
    replayed out of process, under the fuzzer's limits, not by calling `check`."""
    return path.name.startswith(("timeout-", "oom-"))


def known_signatures(target: str, check) -> set[str]:
    """Replay the kept crash inputs of `target` through `check` (hangs and runaways
    aside); the signatures of those that still fail."""
    found = set()
    for path in crash_inputs(target):
        if is_resource_finding(path):
            continue
        try:
            check(path.read_bytes())
        except Exception as exc:  # noqa: BLE001 -- any failure is what we want to name
            found.add(signature(exc))
    return found

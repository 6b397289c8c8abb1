"""A faster driver for Lark's LALR tables: the same grammar, the same trees, a third of the time.

Lark's `parse` spends most of a printed model's parse outside the LALR algorithm: a
`Token` built through keyword checks and a line counter for every token, a second
regular-expression match for the blanks before it, rules compared by `__eq__` on every
reduction, and a callback for each of the seven unit reductions that carry an operand
up the precedence ladder (`?value: equality`, ...).  This driver runs the very tables
and tree callbacks Lark computed from grammar/relay.lark (one grammar), with:

* one match per token: each state's contextual lexer is Lark's own terminal alternation,
  in Lark's order, with the ignored blanks in front, in an atomic group (no terminal of
  the grammar starts with a blank, so this finds the token Lark's lexer finds, and
  nothing backtracks into the blanks); keywords are told from names
  by Lark's own tables (`_create_unless`), as a dictionary;
* plain-`str` keys in the tables (Lark's are `Token`s, compared by a Python `__eq__`);
* the unit reductions whose callback hands its only child up unchanged (Lark's
  `ExpandSingleChild`; found by probing each callback) done without calling it, and a
  run of them, which depends only on the two states on top of the stack and the
  lookahead, remembered.

The trees are Lark's (its callbacks build them) and tokens carry the same type, value,
`start_pos` and `end_pos`; their line and column are left None (nothing reads them:
spans are offsets).  On any input the driver does not take to its end without a syntax
error it raises `NotTaken`, and the caller parses with Lark itself, which raises the
error with everything recovery needs (parser/recovery.py).  tests/test_lalr_driver.py
checks tree for tree against Lark on the corpus and the test inputs.
"""

from __future__ import annotations

import re

from lark import Lark, Token, Tree
from lark.lexer import PatternStr, UnlessCallback
from lark.parsers.lalr_analysis import Shift

from ..pauses import pause_point
from .call_statements import SAMPLES, CallStatements

PAUSE_TOKENS = 256  # tokens between two pause points (compiler/pauses.py): about half a millisecond


class NotTaken(Exception):
    """The text has a syntax error (or something the driver does not handle): parse it
    with Lark, which says what."""


def _plain(name) -> str:
    return "".join(name)  # a `str`, not a Lark `Token` (whose `__eq__` is Python code)


class LalrDriver:
    """Parses with the tables of one Lark LALR parser built with the contextual lexer."""

    def __init__(self, lark: Lark) -> None:
        frontend = lark.parser
        inner = frontend.parser.parser
        table = inner.parse_table
        callbacks = inner.callbacks
        if any(isinstance(key, str) for key in callbacks):
            raise ValueError("terminal callbacks are not supported")
        ignore = {_plain(n) for n in lark.lexer_conf.ignore}
        blank = "|".join(lark.get_terminal(n).pattern.to_regexp() for n in sorted(ignore)) or "(?!)"
        rules: list = []
        numbered: dict = {}
        self.actions: dict[int, dict[str, int]] = {}  # state → terminal → next state, or ~rule number
        self.goto: dict[int, dict[str, int]] = {}  # state → rule name → next state
        for state, row in table.states.items():
            actions, goto = {}, {}
            for symbol, (action, arg) in row.items():
                symbol = _plain(symbol)
                if action is Shift:
                    (actions if symbol.isupper() or symbol == "$END" else goto)[symbol] = arg
                else:
                    if arg not in numbered:
                        numbered[arg] = len(rules)
                        rules.append(arg)
                    actions[symbol] = ~numbered[arg]
            self.actions[state], self.goto[state] = actions, goto
        self.sizes = [len(rule.expansion) for rule in rules]
        self.origins = [_plain(rule.origin.name) for rule in rules]
        self.callbacks = [None if _hands_up(callbacks[rule], rule) else callbacks[rule] for rule in rules]
        self.start_states = dict(table.start_states)
        self.end_states = dict(table.end_states)
        self.units: dict[tuple[int, int, str], int] = {}  # (below, top, lookahead) → top after unit reductions
        self._lark_lexers = frontend.lexer.lexers  # state → Lark's lexer (states share them)
        self._lexing = (ignore, blank, lark.lexer_conf.g_regex_flags)
        self._built: dict[int, tuple] = {}  # id(Lark's lexer) → `_state_lexer`'s
        self.blanks = re.compile(f"(?>(?:{blank})*)", lark.lexer_conf.g_regex_flags).match
        # state → (its lexer's match, its keywords, its actions): one lookup a token, made
        # when a parse first reaches the state (`_row`)
        self.rows: dict[int, tuple] = {}
        self.shortcuts: dict = {}  # state after a statement's `%N` → (state below → its plan)
        self._plan_shortcuts(lark)

    def parse(self, text: str, start: str):
        """The tree of `text` from rule `start`, as `Lark.parse` gives it; `NotTaken` on a
        syntax error."""
        actions, goto, rows, units = self.actions, self.goto, self.rows, self.units
        shortcuts = self.shortcuts
        sizes, origins, callbacks = self.sizes, self.origins, self.callbacks
        states = [self.start_states[start]]
        values: list = []
        end_state = self.end_states[start]
        pos, end = 0, len(text)
        new = str.__new__
        countdown = PAUSE_TOKENS
        while True:
            countdown -= 1
            if countdown <= 0:
                countdown = PAUSE_TOKENS
                pause_point()
            try:
                match, keywords, row = rows[states[-1]]
            except KeyError:
                match, keywords, row = self._row(states[-1])
            m = match(text, pos)
            if m is None:
                pos = self.blanks(text, pos).end()
                if pos == end:
                    break
                raise NotTaken(pos)
            kind = m.lastgroup
            value = m[kind]
            pos = m.end()
            token = new(Token, value)
            renamed = keywords.get(kind)
            if renamed is not None:
                kind = renamed.get(value, kind)
            token.type = kind
            token.value = value
            token.start_pos = pos - len(value)
            token.end_pos = pos
            token.line = token.column = token.end_line = token.end_column = None
            act = row.get(kind)
            while True:  # reduce, then shift the token
                if act is None:
                    raise NotTaken(token.start_pos)
                if act >= 0:
                    states.append(act)
                    values.append(token)
                    if act in shortcuts:  # a statement's `%N`: `= op(args);` read at once?
                        plan = shortcuts[act].get(states[-2])
                        read = plan[0](text, pos, token, plan[3]) if plan is not None else None
                        if read is not None:
                            values[-1], semicolon, pos = read
                            states[-1] = plan[1]
                            states.append(plan[2])
                            values.append(semicolon)
                            countdown -= SHORTCUT_TOKENS
                    break
                rule = ~act
                callback = callbacks[rule]
                if callback is None:
                    states[-1] = self._units(states[-2], states[-1], kind, rule) \
                        if (key := (states[-2], states[-1], kind)) not in units else units[key]
                    act = actions[states[-1]].get(kind)
                    continue
                size = sizes[rule]  # `_reduce`, inlined: this loop is the parse's hot path
                if size:
                    children = values[-size:]
                    del states[-size:]
                    del values[-size:]
                else:
                    children = []
                states.append(goto[states[-1]][origins[rule]])
                values.append(callback(children))
                act = actions[states[-1]].get(kind)
        while True:  # the end: reduce until the start rule is done
            act = actions[states[-1]].get("$END")
            if act is None or act >= 0:
                raise NotTaken(end)
            if callbacks[~act] is None:
                states[-1] = goto[states[-2]][origins[~act]]
            else:
                self._reduce(states, values, ~act)
            if states[-1] == end_state:
                return values[-1]

    def _row(self, state: int) -> tuple:
        """`rows[state]`, made now: a parse reaches few of the grammar's states (51 of 443
        for a printed ResNet-50, with 99 lexers between them), and compiling every
        state's lexer first took 0.09 CPU s of each process's first parse."""
        row = self.rows[state] = (*self._lexer(state), self.actions[state])
        return row

    def _lexer(self, state: int) -> tuple:
        """`_state_lexer` of the state's lexer (KeyError for a state without one), made once
        for all the states that share it."""
        lexer = self._lark_lexers[state]
        found = self._built.get(id(lexer))
        if found is None:
            found = self._built[id(lexer)] = _state_lexer(lexer, *self._lexing)
        return found

    def _plan_shortcuts(self, lark: Lark) -> None:
        """Where the short cut for `%N = op(args);` applies (call_statements.py): after a
        `%N` shifted from a state whose `stmt` goto shifts a `;`.  Kept only if it gives
        Lark's trees on the samples."""
        names = {t.pattern.value: _plain(t.name) for t in lark.terminals
                 if isinstance(t.pattern, PatternStr) and t.pattern.value in ("=", "(", ",", ")", ";")}
        if len(names) != 5:
            return
        calls = CallStatements(names)
        for below, actions in self.actions.items():
            graph, stmt = actions.get("GRAPH"), self.goto[below].get("stmt")
            if graph is None or graph < 0 or stmt is None:
                continue
            semicolon = self.actions[stmt].get(names[";"])
            eq = self.actions[graph].get(names["="])
            if semicolon is None or semicolon < 0 or eq is None or eq < 0 or eq not in self._lark_lexers:
                continue
            self.shortcuts.setdefault(graph, {})[below] = (calls.read, stmt, semicolon, _name_lexer(*self._lexer(eq)))
        if self.shortcuts and not self._shortcut_agrees(lark):
            self.shortcuts = {}

    def _shortcut_agrees(self, lark: Lark) -> bool:
        """Whether the short cut gives Lark's own tree for each of its samples."""
        text = "def @f(%x, %y) {\n  " + "\n  ".join(SAMPLES) + "\n  %0\n}"
        try:
            tree = self.parse(text, "item")
        except NotTaken:
            return False
        return _same(tree, lark.parse(text, start="item"))

    def _reduce(self, states: list, values: list, rule: int) -> None:
        size = self.sizes[rule]
        if size:
            children = values[-size:]
            del states[-size:]
            del values[-size:]
        else:
            children = []
        states.append(self.goto[states[-1]][self.origins[rule]])
        values.append(self.callbacks[rule](children))

    def _units(self, below: int, top: int, kind: str, rule: int) -> int:
        """The top state after the run of unit reductions that starts with `rule`, with
        `below` under `top` and `kind` ahead (remembered: it depends on nothing else)."""
        key = (below, top, kind)
        while True:
            top = self.goto[below][self.origins[rule]]
            act = self.actions[top].get(kind)
            if act is None or act >= 0 or self.callbacks[~act] is not None:
                break
            rule = ~act
        self.units[key] = top
        return top


def _hands_up(callback, rule) -> bool:
    """Whether a one-symbol rule's tree callback returns its only child unchanged (Lark's
    `ExpandSingleChild` on a child it does not inline): then reducing needs no call."""
    if len(rule.expansion) != 1:
        return False
    probe = Tree("probe", [Token("A", "a"), Token("B", "b")])
    return callback([probe]) is probe


def _state_lexer(lexer, ignore: set[str], blank: str, flags: int):
    """(match, keywords) for one of Lark's contextual lexers: `match(text, pos)` finds the
    blanks and the next token, named by its group; `keywords[terminal][text]` renames a
    name that is a keyword (Lark's `UnlessCallback`)."""
    scanner = lexer.scanner
    alternatives = "|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in scanner.terminals
                            if t.name not in ignore)
    keywords: dict[str, dict[str, str]] = {}
    for name, callback in lexer.callback.items():
        if not isinstance(callback, UnlessCallback):
            raise ValueError(f"lexer callback on {name} is not supported")
        words = {}
        for t in callback.scanner.terminals:
            if not isinstance(t.pattern, PatternStr) or t.pattern.flags:
                raise ValueError(f"keyword {t.name} is not a plain string")
            words[_plain(t.pattern.value)] = _plain(t.name)
        keywords[_plain(name)] = words
    pattern = f"(?>(?:{blank})*)(?:{alternatives or '(?!)'})"  # atomic: no backtracking into blanks
    return re.compile(pattern, flags).match, keywords


SHORTCUT_TOKENS = 8  # what a statement read by the short cut counts for, between pause points


def _name_lexer(match, keywords):
    """`read(text, at, name)`: the kind of token a state's lexer reads at `at`, where the
    text holds `name` followed by a blank or `(`, or "" if that token is not `name`
    whole.  What the lexer reads there depends on `name` alone (no terminal reads on past
    a blank or a `(` after a name), so each name is lexed once."""
    known: dict[str, str] = {}

    def read(text: str, at: int, name: str) -> str:
        kind = known.get(name)
        if kind is None:
            m = match(text, at)
            kind = "" if m is None or m.end() != at + len(name) else m.lastgroup
            renamed = keywords.get(kind)
            if renamed is not None:
                kind = renamed.get(name, kind)
            if len(known) >= NAMES_KEPT:
                known.clear()
            known[name] = kind
        return kind
    return read


NAMES_KEPT = 4096  # operator names whose token kind a driver remembers


def _same(a, b) -> bool:
    """Trees equal, tokens with their type and offsets."""
    if isinstance(a, Tree) or isinstance(b, Tree):
        return isinstance(a, Tree) and isinstance(b, Tree) and a.data == b.data and \
            len(a.children) == len(b.children) and all(_same(x, y) for x, y in zip(a.children, b.children))
    return (a, a.type, a.start_pos, a.end_pos) == (b, b.type, b.start_pos, b.end_pos)

"""The parser's short cut for the commonest statement of a printed model, `%N = op(%a, %b);`.

Almost every statement of a printed model (and of a generated chain) binds a graph
number to a call of a named operator on graph numbers and locals, with nothing else in
it (the `ty=` comments are blanks by the time the grammar reads the text: scan.py).  The
LALR driver (lalr_driver.py) gives each of its eight to a dozen tokens a match of its
state's lexer, an action lookup and the reductions between; here the rest of such a
statement after its `%N` is matched by one regular expression, its tokens are cut from
that match, and its tree is built directly, the tree Lark's callbacks build for it (its
children when first read: `StatementTree`):

    graph_stmt [GRAPH, EQUAL, call [name [IDENT|DOTTED], LPAR, call_args [arg, COMMA, ...], RPAR]]

where each argument is `graph [GRAPH]` or `local [LOCAL]`.  The driver then stands where
its own parse of the statement would leave it, the `;` shifted.  It takes the short cut
only where a statement of a block may start (the state after the `%N` has the statement
rule below it and a `;` after that), and the operator's name must be what the state's
own lexer reads there (not a keyword, not a number such as `inff`).  Anything else (an
attribute, a number, a nested call, a tuple, a `%N.0`) is parsed as before.  At start-up
`CallStatements.agrees` parses a few statements both ways and the driver keeps the
short cut only if the trees are the same (tests/test_call_statements.py checks the
corpus, generated files and random statements tree for tree).
"""

from __future__ import annotations

import re

from lark import Token, Tree

_BLANKS = r"[ \t\f\r\n]*"  # the grammar's ignored WS, exactly (not `\s`, which takes more)
_LOCAL = r"%[A-Za-z_][A-Za-z0-9_\/]*(?:(?:\.|::|:(?=[0-9])|-)[A-Za-z0-9_\/]+)*"
_ARG = rf"(?:%[0-9]+|{_LOCAL})(?=[ \t\f\r\n,)])"
_NAME = r"[A-Za-z_][A-Za-z0-9_\/]*(?:\.[A-Za-z_][A-Za-z0-9_\/]*)*"

# After the statement's `%N`: `= name(arg, arg, ...);`.  Groups: 1 `=`, 2 the name, 3 `(`,
# 4 the first argument, 5 the comma after it and 6 the second argument, 7 the other
# arguments with their commas, 8 `)`; the `;` ends the match.
_REST = re.compile(
    rf"{_BLANKS}(=){_BLANKS}({_NAME}){_BLANKS}(\(){_BLANKS}({_ARG})"
    rf"(?:{_BLANKS}(,){_BLANKS}({_ARG})((?:{_BLANKS},{_BLANKS}{_ARG})*))?{_BLANKS}(\)){_BLANKS};")
_MORE = re.compile(rf",|%[0-9]+|{_LOCAL}")  # the tokens of group 7 (checked), blanks skipped

SAMPLES = ("%0 = add(%x, %x);", "%12 = nn.relu(%11);", "%3 = concatenate(%a.b, %2 , %x-1,%y::z);",
           "%4 = f/g(\n  %3\t);")


class CallStatements:
    """The short cut's matcher and tree builder for one driver (`names`: the terminal
    names of `=`, `(`, `,`, `)` and `;` in the grammar)."""

    def __init__(self, names: dict[str, str]) -> None:
        self.eq, self.lpar, self.comma = names["="], names["("], names[","]
        self.rpar, self.semi = names[")"], names[";"]

    def read(self, text: str, pos: int, graph: Token, name_lexer):
        """The statement whose `%N` is `graph`, read, its end at `pos`: (its tree, its `;`
        token, the offset after the `;`), or None when it is not of the short cut's form.
        `name_lexer(text, at, name)` is the kind of token the lexer of the state after
        `=` reads at `at` ("" unless it is `name` whole): it must be a name.  The tree's
        children are made when first read (`StatementTree`)."""
        m = _REST.match(text, pos)
        if m is None:
            return None
        kind = name_lexer(text, m.start(2), m[2])
        if kind != "IDENT" and kind != "DOTTED":
            return None
        tree = Tree.__new__(StatementTree)
        tree.data, tree._meta, tree._pending = "graph_stmt", None, (self, m, graph, kind)
        end = m.end()
        return tree, _token(self.semi, ";", end - 1), end

    def children(self, m: re.Match, graph: Token, kind: str) -> list:
        """The children of the `graph_stmt` tree of the statement `m` matched (its `%N`:
        `graph`; its operator's name, a token of `kind`)."""
        _, (eq, _), (at, _), (lpar, _), (first, _), (comma, _), (second, _), (more, more_end), \
            (rpar, _) = m.regs
        text = m.string
        name, first_arg, second_arg = m.group(2, 4, 6)
        args = [_arg(first_arg, first)]
        if comma >= 0:
            args += (_token(self.comma, ",", comma), _arg(second_arg, second))
            if more < more_end:
                for part in _MORE.finditer(text, more, more_end):
                    value = part[0]
                    args.append(_token(self.comma, value, part.start()) if value == "," else
                                _arg(value, part.start()))
        call = _tree("call", [_tree("name", [_token(kind, name, at)]), _token(self.lpar, "(", lpar),
                              _tree("call_args", args), _token(self.rpar, ")", rpar)])
        return [graph, _token(self.eq, "=", eq), call]


class StatementTree(Tree):
    """The `graph_stmt` tree of a statement the short cut read, the same as Lark's; its
    children (eleven tokens and trees for `%2 = add(%1, %1);`) are made when something
    first reads them.  The parse makes two objects for such a statement, its tree and its
    `;`: the syntax diagnostics of a long body come out before its trees are made (the
    lowering reads them next)."""

    _pending = None  # (the CallStatements, the match, the `%N` token, the name's kind) until read

    @property
    def children(self) -> list:
        pending = self._pending
        if pending is not None:
            self._pending = None
            self._kids = pending[0].children(*pending[1:])
        return self._kids

    @children.setter
    def children(self, value: list) -> None:
        self._pending, self._kids = None, value


def _token(kind: str, value: str, start: int, new=str.__new__) -> Token:
    token = new(Token, value)
    token.type = kind
    token.value = value
    token.start_pos = start
    token.end_pos = start + len(value)
    token.line = token.column = token.end_line = token.end_column = None
    return token


def _arg(value: str, start: int) -> Tree:
    if value[1].isdigit():
        return _tree("graph", [_token("GRAPH", value, start)])
    return _tree("local", [_token("LOCAL", value, start)])


def _tree(data: str, children: list, new=Tree.__new__) -> Tree:
    tree = new(Tree)
    tree.data, tree.children, tree._meta = data, children, None
    return tree

"""The semantic tokens take their keywords and dtype names from the parser (server/tokens.py)."""

from relaylens.compiler.parser import parse
from relaylens.server.scopes import Scopes
from relaylens.server.tokens import T, semantic_tokens

TEXT = '''#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32], %b: bool) -> Tensor[(2), float32] {
  let %y = nn.softmax(%x, axis=-1, layout=nullptr);
  if (%b) { %y } else { %x }
}
'''


def _kinds(text: str) -> dict[str, set[int]]:
    result = parse(text)
    tokens, _ = semantic_tokens(result, Scopes(result).params)
    out: dict[str, set[int]] = {}
    for start, end, kind, _mods in tokens:
        out.setdefault(text[start:end], set()).add(kind)
    return out


def test_keywords_are_the_grammars_and_the_null_values():
    kinds = _kinds(TEXT)
    for word in ("def", "let", "if", "else", "nullptr"):
        assert kinds[word] == {T["keyword"]}, word


def test_tensor_and_dtype_names_are_types():
    kinds = _kinds(TEXT)
    for word in ("Tensor", "float32", "bool"):
        assert kinds[word] == {T["type"]}, word

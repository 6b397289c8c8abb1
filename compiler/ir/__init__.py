"""The Relay IR: expressions, types, attributes, spans, modules and visitors."""

from .attrs import EMPTY_ATTRS, Attrs, FloatImm, IntImm, MetaRef, Opaque
from .expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    ErrorExpr,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Node,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    op,
    pattern_vars,
)
from .functor import ExprFunctor, ExprMutator, ExprVisitor, children, post_order
from .module import IRModule, TypeData
from .span import AnySpan, LayerSpan, SequentialSpan, Source, Span, cover, document_span, sequential
from .types import (
    ANY,
    UNIT,
    AnyDim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    MetaType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
    scalar_type,
)

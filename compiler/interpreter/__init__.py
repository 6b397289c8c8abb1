"""The reference interpreter: runs a module on numpy arrays (see interpreter.py).

    Interpreter(module).call("main", [x]) -> value
    Interpreter(module).evaluate(expr, {var: value}) -> value
    interpret(module, *args, entry="main") -> value
    InterpreterError     a run-time error with the span of the expression that failed

Values (values.py): numpy arrays, tuples, Closure, ConstructorValue, RefValue.
"""

from .interpreter import Frame, Interpreter, InterpreterError, interpret
from .values import Closure, ConstructorValue, RefValue, Value, type_mismatch, value_text

__all__ = ["Closure", "ConstructorValue", "Frame", "Interpreter", "InterpreterError", "RefValue", "Value",
           "interpret", "type_mismatch", "value_text"]

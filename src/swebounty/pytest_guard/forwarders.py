"""Forwarders: links from a test item to its test function that are no trusted file's code,
believed for what reading them proves (genuine.unwrap's and genuine.function_of's links
besides genuine code):
- a closure forwarder (Hypothesis's reflection template, 2017 to 2026) calls the one function
  its closure holds with its arguments and returns what it returns: its bytecode is read,
  instruction by instruction (forwards);
- functools.partial(contextvars.Context.run, f) (pypa/build's conftest.py runs each test in a
  copy of the context so) is C code all through: it calls f with the very arguments it is
  given (run_in_context; genuine.function_of reads through it).

Python 3.6+, standard library only; no code of the workspace runs while it reads.
"""

import functools
import opcode
import sys
import types

try:
    from contextvars import Context as _Context
except ImportError:  # Python 3.6
    _Context = None

_OPNAME = tuple(opcode.opname)  # the interpreter's, as it was before the workspace ran
_EXTENDED_ARG = opcode.opmap["EXTENDED_ARG"]
# What a closure forwarder may do: load its arguments, constants and its one free variable,
# pack *args and **kwargs, call once and return (Python 3.6 to 3.14 spell it with these).
_QUIET = frozenset(("CACHE", "NOP", "RESUME", "COPY_FREE_VARS", "EXTENDED_ARG", "PUSH_NULL"))
_PACK = frozenset((
    "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_BORROW", "LOAD_FAST_LOAD_FAST",
    "LOAD_FAST_BORROW_LOAD_FAST_BORROW", "LOAD_CONST", "BUILD_TUPLE", "BUILD_LIST", "BUILD_MAP",
    "LIST_EXTEND", "LIST_TO_TUPLE", "DICT_MERGE", "BUILD_TUPLE_UNPACK_WITH_CALL",
    "BUILD_MAP_UNPACK_WITH_CALL", "KW_NAMES", "PRECALL",
))  # fmt: skip
_CALLS = frozenset(("CALL", "CALL_KW", "CALL_FUNCTION", "CALL_FUNCTION_KW", "CALL_FUNCTION_EX"))
_LIST_TO_TUPLE = 6  # CALL_INTRINSIC_1's argument for it (3.12 and later)


def forwards(func):
    """Whether `func` only calls the one function its closure holds with its own arguments
    and returns what it returns: its bytecode, read instruction by instruction."""
    code = func.__code__
    closure = func.__closure__ or ()
    if len(code.co_freevars) != 1 or code.co_cellvars or len(closure) != 1:
        return False
    try:
        if not isinstance(closure[0].cell_contents, types.FunctionType):
            return False
    except ValueError:  # an empty cell
        return False
    if getattr(code, "co_exceptiontable", b""):
        return False  # a handler could turn the test's failure into a return
    free = code.co_nlocals if sys.version_info >= (3, 11) else 0
    names, extended, ops = [], 0, code.co_code
    for i in range(0, len(ops) - 1, 2):
        op, arg = ops[i], ops[i + 1] | extended
        extended = arg << 8 if op == _EXTENDED_ARG else 0
        if not extended:
            names.append((_OPNAME[op], arg))
    loads = [(n, a) for n, a in names if n not in _QUIET]
    calls = [n for n, _ in loads if n in _CALLS]
    if not loads or loads[0] != ("LOAD_DEREF", free) or len(calls) != 1:
        return False
    if loads[-1][0] != "RETURN_VALUE" or loads[-2][0] not in _CALLS:
        return False
    return all(
        n in _PACK or (n == "CALL_INTRINSIC_1" and a == _LIST_TO_TUPLE) for n, a in loads[1:-2]
    )


def run_in_context(obj):
    """What `obj` calls when it is functools.partial(context.run, f) (C code all through, read
    without running any other): f, with the very arguments `obj` is called with; else None."""
    if type(obj) is not functools.partial or _Context is None:
        return None
    run, args = obj.func, obj.args
    if obj.keywords or type(args) is not tuple or len(args) != 1:
        return None
    if type(run) is not types.BuiltinMethodType or type(run.__self__) is not _Context:
        return None
    return args[0] if run == run.__self__.run else None

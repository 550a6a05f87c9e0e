"""Forwarders: links from a test item to its test function that are no trusted file's code,
believed for what reading them proves (genuine.unwrap's and genuine.function_of's links
besides genuine code):
- a closure forwarder (Hypothesis's reflection template, 2017 to 2026) calls the one function
  its closure holds with its arguments and returns what it returns: its bytecode is read,
  instruction by instruction (forwards);
- a caller's forwarder (SQLAlchemy's util.decorator, the `decorator` package before 5.0) is a
  generated file's (`<string>`) whose code is what the interpreter compiles from
  `def NAME(PARAMS): return CALLER(HELD, PARAMS)`, CALLER and HELD taken from its globals and
  PARAMS passed on in order or by their own names: that source is compiled here and the code
  compared (hands_on). Its signature and default arguments must be HELD's: what it passes on is
  what pytest gives the test. CALLER, the decorator's target, must be genuine code
  (genuine.py), and its source must prove that it calls what it is handed (caller_problem): it
  takes (fn, *args, **kw), never rebinds those names, has no `except` (nor a `finally` that
  returns), and one of its statements, reached before any `return` of its own, hands fn,
  *args and **kw to a call: fn's own, or a function's that is handed fn (SQLAlchemy's
  exclusions: `self._do(config._current, fn, *args, **kw)`);
- functools.partial(contextvars.Context.run, f) (pypa/build's conftest.py runs each test in a
  copy of the context so) is C code all through: it calls f with the very arguments it is
  given (run_in_context; genuine.function_of reads through it).
What this cannot prove, as for genuine closure wrappers: what CALLER does with what it holds,
nor what a function it hands fn to does with it, nor what a `with` in it suppresses.
SQLAlchemy's exclusions turn a failure into a pass when one of their fails_if predicates
holds, and a project's requirements (alembic.testing's, code the submission may change)
choose those predicates: a submission that rebuilds a requirement as fails_if(True) inverts
the tests it decorates unseen (as it could make alembic.testing's eq_ assert nothing). Not
believed: a caller whose call is in a branch or a loop (SQLAlchemy's profiling decorator),
one that rebinds its arguments (its combinations with exclusions), coroutine wrappers.

Python 3.6+, standard library only; no code of the workspace runs while it reads.
"""

import ast
import functools
import keyword
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
_VARARGS, _VARKEYWORDS = 0x04, 0x08
_ASYNC = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async generator
_SHAPE = 0x01 | 0x02 | _VARARGS | _VARKEYWORDS | _ASYNC  # what a code's flags say of its calls
_TRY = tuple(getattr(ast, n) for n in ("Try", "TryStar") if hasattr(ast, n))
_STATEMENTS = (ast.Return, ast.Expr, ast.Assign)  # whose value may be the call
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_compiled = {}  # a forwarder's shape -> the code objects its sources compile to
_proven = {}  # id(code) -> (code, why that caller is not proven, or None)
_trees = {}  # id(source) -> (source, its syntax tree or None)


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


def held(func):
    """The functions a link holds: its closure's, and a caller's forwarder's CALLER and HELD."""
    found = []
    for cell in func.__closure__ or ():
        try:
            if type(cell.cell_contents) is types.FunctionType:
                found.append(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    return found or list(hands_on(func) or ())


# ------------------------------------------------------------------ a caller's forwarder


def hands_on(func):
    """(CALLER, HELD) when `func` is a caller's forwarder (see the docstring), else None."""
    code, space = func.__code__, func.__globals__
    if func.__closure__ or type(space) is not dict or len(code.co_names) != 2:
        return None
    if not code.co_filename.startswith("<") or code.co_flags & _ASYNC:
        return None  # generated code: it claims no file
    caller, inner = (dict.get(space, name) for name in code.co_names)
    if type(caller) is not types.FunctionType or type(inner) is not types.FunctionType:
        return None
    if not _same_signature(func, inner) or not _plain(code.co_consts):
        return None
    if not any(_same_code(code, c) for c in _forwarder_codes(code, len(func.__defaults__ or ()))):
        return None
    return caller, inner


def _params(code):
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & _VARARGS) + bool(code.co_flags & _VARKEYWORDS)
    return (code.co_argcount, getattr(code, "co_posonlyargcount", 0), code.co_kwonlyargcount,
            code.co_flags & (_VARARGS | _VARKEYWORDS), code.co_varnames[:count])  # fmt: skip


def _same_signature(func, inner):
    if _params(func.__code__) != _params(inner.__code__):
        return False
    if func.__defaults__ is not inner.__defaults__:
        return False
    mine, theirs = func.__kwdefaults__, inner.__kwdefaults__
    if mine is theirs:
        return True
    if type(mine) is not dict or type(theirs) is not dict or set(mine) != set(theirs):
        return False
    for name in mine:  # compiled from a repr by older SQLAlchemy: equal constants will do
        a, b = dict.get(mine, name), dict.get(theirs, name)
        if a is not b and not (type(a) is type(b) and _plain(a) and a == b):
            return False
    return True


def _plain(value, depth=0):
    """Whether comparing `value` runs only the interpreter's code (no class of the tests')."""
    if type(value) in (int, float, complex, str, bytes, bool, type(None)):
        return True
    return type(value) is tuple and depth < 4 and all(_plain(v, depth + 1) for v in value)


def _same_code(code, compiled):
    return (
        code.co_code == compiled.co_code
        and code.co_consts == compiled.co_consts
        and code.co_names == compiled.co_names
        and code.co_varnames == compiled.co_varnames
        and code.co_freevars == compiled.co_freevars == ()
        and code.co_cellvars == compiled.co_cellvars == ()
        and _params(code) == _params(compiled)
        and code.co_flags & _SHAPE == compiled.co_flags & _SHAPE
        and getattr(code, "co_exceptiontable", b"") == getattr(compiled, "co_exceptiontable", b"")
    )


def _forwarder_codes(code, defaults):
    """What the interpreter compiles from a forwarder's source for `code`'s names: its
    arguments passed on positionally (the `decorator` package), or those with defaults by
    their names (SQLAlchemy's apply_kw); keyword-only ones by their names in both."""
    names = (code.co_name, *code.co_names, *code.co_varnames)
    key = (names, _params(code), defaults)
    found = _compiled.get(key)
    if found is not None:
        return found
    found = _compiled[key] = []
    if not all(n.isidentifier() and not keyword.iskeyword(n) for n in names):
        return found
    npos, nposonly, nkw, flags, params = _params(code)
    pos, kwonly = params[:npos], params[npos : npos + nkw]
    star = params[npos + nkw] if flags & _VARARGS else None
    starstar = params[-1] if flags & _VARKEYWORDS else None
    signature = list(pos[:nposonly]) + (["/"] if nposonly else []) + list(pos[nposonly:])
    signature += ["*" + star] if star else (["*"] if kwonly else [])
    signature += list(kwonly) + (["**" + starstar] if starstar else [])
    tail = (["*" + star] if star else []) + ["%s=%s" % (k, k) for k in kwonly]
    tail += ["**" + starstar] if starstar else []
    split = max(npos - defaults, nposonly)
    by_name = list(pos[:split]) + ["%s=%s" % (p, p) for p in pos[split:]]
    for passed in (list(pos), by_name):
        source = "def %s(%s):\n    return %s(%s)\n" % (
            code.co_name, ", ".join(signature), code.co_names[0],
            ", ".join([code.co_names[1], *passed, *tail]))  # fmt: skip
        try:
            top = compile(source, "<forwarder>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
        found.extend(c for c in top.co_consts if isinstance(c, types.CodeType))
    return found


# ------------------------------------------------------------------ the caller's source


def caller_problem(caller, is_genuine, source_of):
    """Why a caller's forwarder's CALLER is not believed to call what it is handed (a clause:
    "NAME of FILE, not proven to call it: WHY"), or None. `is_genuine`, `source_of`: as
    genuine.unwrap is given them."""
    code = caller.__code__
    if not is_genuine(caller):
        return "code of %s, which is not genuine" % code.co_filename
    source = source_of(caller) if source_of is not None else None
    why = "its file was not read"
    if source is not None:
        seen = _proven.get(id(code))
        if seen is None or seen[0] is not code:
            seen = _proven[id(code)] = (code, _prove(code, source))
        why = seen[1]
    if why is None:
        return None
    return "%s of %s, not proven to call it: %s" % (code.co_name, code.co_filename, why)


def _prove(code, source):
    if code.co_flags & _ASYNC:
        return "it is a generator or a coroutine"
    if code.co_argcount != 1 or code.co_kwonlyargcount or ~code.co_flags & 0x0C:
        return "it does not take (fn, *args, **kw)"
    fn, star, starstar = code.co_varnames[:3]
    node = _definition(code, source)
    if node is None:
        return "its definition is not in its file"
    for sub in (n for stmt in node.body for n in ast.walk(stmt)):
        if isinstance(sub, ast.Name) and sub.id in (fn, star, starstar):
            if not isinstance(sub.ctx, ast.Load):
                return "it rebinds %s" % sub.id
        elif isinstance(sub, _TRY) and sub.handlers:
            return "it catches exceptions"
        elif isinstance(sub, _TRY) and any(_returns(s, stops=True) for s in sub.finalbody):
            return "it returns from a finally clause"
    if not _reaches(node.body, fn, star, starstar):
        return "it calls %s in a branch or a loop, after a return, or not at all" % fn
    return None


def _definition(code, source):
    """The `def` statement whose code `code` is: by its name and first line (that of its
    first decorator, as a code object counts it)."""
    seen = _trees.get(id(source))
    if seen is None or seen[0] is not source:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, TypeError):
            tree = None
        seen = _trees[id(source)] = (source, tree)
    for node in ast.walk(seen[1]) if seen[1] is not None else ():
        if not isinstance(node, ast.FunctionDef) or node.name != code.co_name:
            continue
        if min([node.lineno] + [d.lineno for d in node.decorator_list]) == code.co_firstlineno:
            return node
    return None


def _reaches(body, fn, star, starstar):
    """True when a statement of `body` (or of a `with` or `try` in it), reached before any
    `return`, hands fn, *args and **kw to a call; False after a return; None when none does."""
    for stmt in body:
        value = getattr(stmt, "value", None) if isinstance(stmt, _STATEMENTS) else None
        if _hands_on(value, fn, star, starstar):
            return True
        if isinstance(stmt, (ast.With, *_TRY)):
            found = _reaches(stmt.body, fn, star, starstar)
            if found is not None:
                return found
        elif _returns(stmt):
            return False
    return None


def _hands_on(call, fn, star, starstar):
    if not isinstance(call, ast.Call):
        return False
    given = _named(call.func, fn) or any(_named(a, fn) for a in call.args)
    starred = any(isinstance(a, ast.Starred) and _named(a.value, star) for a in call.args)
    merged = any(k.arg is None and _named(k.value, starstar) for k in call.keywords)
    return given and starred and merged


def _named(node, name):
    return isinstance(node, ast.Name) and node.id == name


def _returns(node, stops=False):
    """Whether `node` returns (or, `stops`: breaks or continues) outside a nested scope."""
    kinds = (ast.Return, ast.Break, ast.Continue) if stops else (ast.Return,)
    todo = [node]
    while todo:
        sub = todo.pop()
        if isinstance(sub, kinds):
            return True
        if not isinstance(sub, _SCOPES):
            todo.extend(ast.iter_child_nodes(sub))
    return False

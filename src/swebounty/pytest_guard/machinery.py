"""What the guard records of pytest's reporting machinery (used by swebounty_guard.py).

For every module of pytest, pluggy and unittest: each function, each class of its own (with
its bases), each class member that runs code, by identity. The guard describes the modules
before any code of the workspace runs and again at the end of the session; what differs was
changed (or added) since, and must then be genuine code of a trusted file (genuine.py).

Python 3.6+, standard library only.
"""

import types

WATCHED = ("pytest", "_pytest", "pluggy", "unittest")


def watched(name):
    return name.split(".", 1)[0] in WATCHED and not name.startswith("unittest.mock")


def code_id(obj):
    """What identifies a callable's behaviour: the object, its code and defaults."""
    func = getattr(obj, "__func__", obj)
    if type(func) is types.FunctionType:
        code, defaults, kwdefaults = func.__code__, func.__defaults__, func.__kwdefaults__
        return (id(obj), id(func), id(code), id(defaults), id(kwdefaults))
    return (id(obj), id(func))


def describe(obj, known=None):
    """name -> identity of every function, class and class member a module holds; with
    `known` (a genuine.Genuine), remember each function as one that existed before."""
    found = {}
    for name, value in list(vars(obj).items()):
        if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
            found[name] = code_id(value)
            if known is not None:
                known.remember(value)
        elif isinstance(value, type) and getattr(value, "__module__", None) == obj.__name__:
            # Its bases too: a new base class can bring methods and properties of its own.
            found[name] = (id(value), tuple(id(k) for k in value.__mro__))
            if known is not None:
                known.remember_class(value)
            for attr, member in list(vars(value).items()):
                if isinstance(member, property):
                    found[name + "." + attr] = tuple(
                        code_id(f) for f in (member.fget, member.fset, member.fdel)
                    )
                elif isinstance(member, (staticmethod, classmethod)) or (
                    callable(member) and not isinstance(member, type)
                ):
                    found[name + "." + attr] = code_id(member)
    return found


def member(module, key):
    """`module.key` (or `module.Class.attr`) as it is now."""
    head, _, attr = key.partition(".")
    value = getattr(module, head, None)
    if attr:
        value = vars(value).get(attr) if isinstance(value, type) else None
    return value

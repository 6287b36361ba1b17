"""Normalised code objects and the global names a function reads."""

from __future__ import annotations
import __future__

import dis
import functools
import inspect
from types import CodeType

# Attributes that identify what code does. File names, line tables, first line
# numbers and qualified names are left out: moving a function to another file
# or line, or nesting it differently, must not change its hash.
_CODE_ATTRIBUTES = (
    "co_name",
    "co_argcount",
    "co_posonlyargcount",
    "co_kwonlyargcount",
    "co_nlocals",
    "co_flags",
    "co_code",
    "co_names",
    "co_varnames",
    "co_freevars",
    "co_cellvars",
    "co_exceptiontable",
)

_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"})
_ATTRIBUTE_LOADS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})


def code_fields(code: CodeType) -> tuple[object, ...]:
    """The identifying fields of a code object, nested code objects included.

    Constants that are code objects (lambdas, comprehensions, inner functions)
    are replaced by their own fields, recursively.
    """
    constants = tuple(
        ("code", code_fields(const)) if isinstance(const, CodeType) else const
        for const in code.co_consts
    )
    own = tuple(
        _flags(code) if name == "co_flags" else getattr(code, name, None)
        for name in _CODE_ATTRIBUTES
    )
    return (*own, constants)


# CO_NESTED only says where a function was defined (closures are hashed as
# cells); __future__ flags are per-module compiler switches, not behaviour.
def _ignored_flags() -> int:
    flags = inspect.CO_NESTED
    for feature in __future__.all_feature_names:
        flags |= int(getattr(__future__, feature).compiler_flag)
    return flags


_IGNORED_FLAGS = _ignored_flags()


def _flags(code: CodeType) -> int:
    return code.co_flags & ~_IGNORED_FLAGS


@functools.lru_cache(maxsize=4096)
def global_references(code: CodeType) -> tuple[tuple[str, ...], ...]:
    """The global names a code object reads, each with the attribute chain after it.

    ``helpers.clean(text)`` gives ``("helpers", "clean")``, so the attribute of
    a module that the function really uses can be hashed, not the whole module.
    Nested code objects (lambdas, comprehensions, inner functions) count too.
    The result is sorted and free of duplicates.
    """
    chains: set[tuple[str, ...]] = set()
    _collect(code, chains)
    return tuple(sorted(chains))


def _collect(code: CodeType, chains: set[tuple[str, ...]]) -> None:
    chain: list[str] = []
    for instruction in dis.get_instructions(code):
        if instruction.opname in _GLOBAL_LOADS:
            _flush(chain, chains)
            chain = [str(instruction.argval)]
        elif instruction.opname in _ATTRIBUTE_LOADS and chain:
            chain.append(str(instruction.argval))
        elif instruction.opname not in ("CACHE", "PRECALL", "PUSH_NULL"):
            _flush(chain, chains)
            chain = []
    _flush(chain, chains)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            _collect(const, chains)


def _flush(chain: list[str], chains: set[tuple[str, ...]]) -> None:
    if chain:
        chains.add(tuple(chain))

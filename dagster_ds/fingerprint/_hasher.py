# dill and numpy expose untyped or loosely generic APIs; strict mode stays on except for
# the propagation of their unknown types.
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false
# pyright: reportUnknownVariableType=false, reportUnknownParameterType=false
# pyright: reportMissingTypeArgument=false
"""The Hasher: xxh3-128 over a dill pickle in which code and data are canonical.

The pickle stream is fed straight into xxh3, never kept. Before an object is
pickled, the objects whose default pickle would be unstable or slow are
replaced by a short placeholder holding a content digest:

- functions and classes from the user's own modules: a digest of their
  normalised code and of everything they use (see `_HashContext.function_node`);
  from installed packages: their name and the package version;
- Arrow tables, record batches, arrays and chunked arrays: a digest of their
  buffers, independent of chunking (`_arrow.arrow_digest`);
- numpy arrays and torch tensors: dtype, shape and bytes (``torch.compile``d
  modules: the module they wrap); compiled regexes: pattern and flags;
  paths: their class name and string;
- modules from installed packages and the standard library: their name and
  version; the user's own modules (passed as a value, bound in a closure or
  read whole as a global): a digest of every name they define, hashed like a
  function's globals (see `_HashContext.module_node`);
- code objects: their normalised fields.

Dict items and set elements are written in sorted order, and strings, bytes
and tuples are never memoised, so equal values give equal bytes whatever
their identity, insertion order or ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import builtins
import functools
import marshal
import pickle
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import PurePath
from types import BuiltinFunctionType, CodeType, FunctionType, MethodType, ModuleType
from typing import Any

import dill  # pyright: ignore[reportMissingTypeStubs]
import pyarrow as pa
import xxhash

from dagster_ds.errors import UnhashableError
from dagster_ds.fingerprint._arrow import arrow_digest
from dagster_ds.fingerprint._code import code_fields, global_references
from dagster_ds.fingerprint._modules import module_origin
from dagster_ds.fingerprint._tree import HashNode, combine, leaf

PROTOCOL = 4
_ATOMIC = frozenset({str, int, float, bool, type(None), bytes})
_NOT_MEMOISED = frozenset({str, bytes, tuple})
_CONTAINERS = frozenset({dict, set, frozenset, list, tuple})
_FAST_PATH_MIN_ITEMS = 16
_ARROW_TYPES = (pa.Table, pa.RecordBatch, pa.Array, pa.ChunkedArray)
# Class attributes that describe the class object rather than its behaviour.
_CLASS_NOISE = frozenset(
    {
        "__dict__",
        "__weakref__",
        "__module__",
        "__qualname__",
        "__doc__",
        "__firstlineno__",
        "__static_attributes__",
        "__annotations__",
        "__slotnames__",
        "__parameters__",
        "__orig_bases__",
        # abc.ABCMeta's per-class cache of registered subclasses: not code, not picklable.
        "_abc_impl",
    }
)
_PICKLING_ERRORS = (pickle.PicklingError, TypeError, AttributeError, ValueError, RecursionError)


def _placeholder(kind: str, digest: str) -> str:
    """What is pickled in place of an object hashed by its content digest."""
    return f"<dagster_ds {kind} {digest}>"


class _DigestWriter:
    """A file-like object that feeds whatever is written into xxh3-128."""

    def __init__(self) -> None:
        self.state = xxhash.xxh3_128()

    def write(self, data: bytes) -> int:
        self.state.update(data)
        return len(data)


class _HashPickler(dill.Pickler):  # pyright: ignore[reportUntypedBaseClass]
    """A dill pickler that writes canonical bytes and defers special objects to a context."""

    # dill subclasses the pure-Python pickle._Pickler, whose internals the stubs omit.
    memo: dict[int, tuple[int, object]]
    framer: Any
    write: Callable[[bytes], object]
    get: Callable[[int], bytes]

    def __init__(self, file: _DigestWriter, context: _HashContext) -> None:
        super().__init__(file, protocol=PROTOCOL, byref=False, recurse=False)
        self._context = context

    def memoize(self, obj: object) -> None:
        if type(obj) not in _NOT_MEMOISED:
            pickle._Pickler.memoize(self, obj)  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue, reportArgumentType]

    def save(self, obj: object, save_persistent_id: bool = True) -> None:
        kind = type(obj)
        if kind not in _ATOMIC:
            placeholder = self._context.placeholder(obj)
            if placeholder is not None:
                obj = placeholder
            elif kind in _CONTAINERS and self._save_container(obj):
                return
        super().save(obj, save_persistent_id)

    def _save_container(self, obj: Any) -> bool:
        """Write dicts and sets in sorted order; digest large atomic containers."""
        fast = _atomic_container_digest(obj)
        if fast is not None:
            super().save(_placeholder(type(obj).__name__, fast))
            return True
        if type(obj) in (list, tuple):
            return False
        self.framer.commit_frame()
        remembered = self.memo.get(id(obj))
        if remembered is not None:
            self.write(self.get(remembered[0]))
            return True
        if type(obj) is dict:
            self.write(pickle.EMPTY_DICT)
            self.memoize(obj)
            for key, value in self._context.sorted_items(obj):
                self.save(key)
                self.save(value)
                self.write(pickle.SETITEM)
        elif type(obj) is set:
            self.write(pickle.EMPTY_SET)
            self.memoize(obj)
            self.write(pickle.MARK)
            for element in self._context.sorted_elements(obj):
                self.save(element)
            self.write(pickle.ADDITEMS)
        else:
            self.write(pickle.MARK)
            for element in self._context.sorted_elements(obj):
                self.save(element)
            self.write(pickle.FROZENSET)
            self.memoize(obj)
        return True


def _atomic_container_digest(obj: Any) -> str | None:
    """A digest of a large container of atomic values, or None if it is not one.

    Such containers (vocabularies, lookup tables) are common in closures and are
    hashed in C through marshal (format 2 has no back-references, so equal values
    give equal bytes) instead of object by object.
    """
    if len(obj) < _FAST_PATH_MIN_ITEMS:
        return None
    if type(obj) is dict:
        if not all(type(k) in _ATOMIC and type(v) in _ATOMIC for k, v in obj.items()):
            return None
        try:
            content: object = sorted(obj.items())
        except TypeError:
            return None
    else:
        if not all(type(element) in _ATOMIC for element in obj):
            return None
        if type(obj) in (set, frozenset):
            try:
                content = sorted(obj)
            except TypeError:
                return None
        else:
            content = tuple(obj)
    return xxhash.xxh3_128_hexdigest(marshal.dumps(content, 2))


def _short_str_digest(value: str) -> str | None:
    """The digest `_HashPickler` gives a str of 1 to 255 UTF-8 bytes, without a pickler.

    The bytes it writes are PROTO 4, one FRAME, SHORT_BINUNICODE and STOP (a str is
    not memoised). A load hashes one such digest per source file: a pickler costs
    several times the hash. Longer or empty strings (no frame) return None.
    """
    encoded = value.encode("utf-8", "surrogatepass")
    if not 0 < len(encoded) <= 0xFF:
        return None
    body = pickle.SHORT_BINUNICODE + bytes((len(encoded),)) + encoded + pickle.STOP
    frame = pickle.FRAME + len(body).to_bytes(8, "little")
    return xxhash.xxh3_128_hexdigest(pickle.PROTO + bytes((PROTOCOL,)) + frame + body)


class _HashContext:
    """State of one hashing call: the recursion stack, memos and the error path."""

    def __init__(self) -> None:
        self._nodes: dict[int, HashNode] = {}
        self._keepalive: list[object] = []
        self._stack: list[int] = []
        self._path: list[str] = []

    # -- entry points -------------------------------------------------------

    def digest(self, value: object) -> str:
        if type(value) is str and (fast := _short_str_digest(value)) is not None:
            return fast
        writer = _DigestWriter()
        try:
            _HashPickler(writer, self).dump(value)
        except UnhashableError:
            raise
        except _PICKLING_ERRORS as error:
            raise self._unhashable(value, error) from error
        return writer.state.hexdigest()

    def describe(self, value: object, kind: str = "value", label: str | None = None) -> HashNode:
        """A tree for ``value`` whose root digest equals ``self.digest(value)``."""
        components = self._components_of(value)
        label = label or _label(value)
        if components is None:
            return HashNode(kind, label, self.digest(value))
        return HashNode(_kind(value), label, self.digest(value), components)

    # -- pickler hook -------------------------------------------------------

    def placeholder(self, obj: object) -> str | None:
        """The placeholder pickled instead of ``obj``, or None to pickle it as usual."""
        kind = type(obj)
        if kind in _CONTAINERS:
            return None
        if kind is FunctionType:
            return _placeholder("function", self.function_node(obj).digest)  # type: ignore[arg-type]
        if isinstance(obj, type):
            if module_origin(obj.__module__).by_value:
                return _placeholder("class", self.class_node(obj).digest)
            return None
        if isinstance(obj, _ARROW_TYPES):
            return _placeholder("arrow", arrow_digest(obj))
        if kind is re.Pattern:
            pattern: re.Pattern[Any] = obj  # type: ignore[assignment]
            return _placeholder("regex", self.digest((pattern.pattern, pattern.flags)))
        if kind is CodeType:
            return _placeholder("code", self.digest(code_fields(obj)))  # type: ignore[arg-type]
        if isinstance(obj, PurePath):  # 3.13 pickles the segments a path was built from
            return _placeholder("path", self.digest((kind.__qualname__, str(obj))))
        if kind is _Undefined:
            return _placeholder("undefined", obj.name)  # type: ignore[attr-defined]
        if isinstance(obj, ModuleType):
            if module_origin(obj.__name__).by_value:
                return _placeholder("module", self.module_node(obj).digest)
            return _placeholder("module", _module_reference(obj.__name__))
        numpy = sys.modules.get("numpy")
        if numpy is not None and kind is numpy.ndarray and not obj.dtype.hasobject:  # type: ignore[attr-defined]
            return _placeholder("ndarray", _ndarray_digest(obj))
        if "torch" in sys.modules:
            return self._torch_placeholder(obj)
        return None

    def _torch_placeholder(self, obj: object) -> str | None:
        """The placeholder of a torch tensor (by content) or ``torch.compile``d module.

        torch pickles a tensor with memory addresses; a compiled module is hashed by
        the module it wraps (the wrapper holds only torch's compiler state).
        """
        torch = sys.modules["torch"]
        if isinstance(obj, torch.Tensor):
            digest = _tensor_digest(obj, torch)
            return _placeholder("tensor", digest) if digest is not None else None
        eval_frame = sys.modules.get("torch._dynamo.eval_frame")
        compiled = getattr(eval_frame, "OptimizedModule", None)
        if compiled is not None and isinstance(obj, compiled):
            return _placeholder("torch.compile", self.digest(obj._orig_mod))  # type: ignore[attr-defined]
        return None

    # -- ordering -----------------------------------------------------------

    def sorted_items(self, mapping: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
        keys = self.sorted_elements(mapping.keys())
        return [(key, mapping[key]) for key in keys]

    def sorted_elements(self, elements: Iterable[Any]) -> list[Any]:
        elements = list(elements)
        try:
            return sorted(elements)
        except TypeError:
            return sorted(elements, key=self.digest)

    # -- functions and classes ---------------------------------------------

    def function_node(self, function: FunctionType) -> HashNode:
        """The tree of a function: by value for the user's code, else by reference."""
        remembered = self._nodes.get(id(function))
        if remembered is not None:
            return remembered
        label = f"<function {function.__qualname__}>"
        compiled = _compiled_original(function)
        if compiled is not None:
            # torch.compile(f): what it computes is f's; the wrapper holds only torch state.
            components = {"torch.compile of": self._component("torch.compile of", compiled)}
            node = HashNode("function", label, combine("torch.compile", components), components)
            return self._remember(function, node)
        module = function.__module__ or "__main__"
        origin = module_origin(module)
        if not origin.by_value:
            return leaf("function", label, f"{module}.{function.__qualname__} {origin.version}")
        if id(function) in self._stack:
            return leaf("function", label, f"recursive {module}.{function.__qualname__}")
        with self._entering(function, label):
            components = self._function_components(function)
        node = HashNode("function", label, combine("function", components), components)
        return self._remember(function, node)

    def _function_components(self, function: FunctionType) -> dict[str, HashNode]:
        code = function.__code__
        components = {"code": HashNode("code", "code", self.digest(code_fields(code)))}
        namespace = function.__globals__
        for chain in global_references(code):
            found = _resolve_global(chain, namespace)
            if found is not None:
                name, value = found
                components[f"global '{name}'"] = self._component(f"global '{name}'", value)
        for name, cell in zip(code.co_freevars, function.__closure__ or (), strict=True):
            try:
                value = cell.cell_contents
            except ValueError:
                components[f"closure variable '{name}'"] = leaf("value", name, "<empty cell>")
                continue
            components[f"closure variable '{name}'"] = self._component(
                f"closure variable '{name}'", value
            )
        parameters = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        defaults = function.__defaults__ or ()
        positional = code.co_varnames[code.co_argcount - len(defaults) : code.co_argcount]
        for name, value in zip(positional, defaults, strict=True):
            components[f"default '{name}'"] = self._component(f"default '{name}'", value)
        for name, value in (function.__kwdefaults__ or {}).items():
            if name in parameters:
                components[f"default '{name}'"] = self._component(f"default '{name}'", value)
        for name, value in vars(function).items():
            if name != "__wrapped__":
                components[f"attribute '{name}'"] = self._component(f"attribute '{name}'", value)
        return components

    def class_node(self, cls: type) -> HashNode:
        """The tree of a user class: its bases, methods and class attributes."""
        remembered = self._nodes.get(id(cls))
        if remembered is not None:
            return remembered
        label = f"<class {cls.__qualname__}>"
        if id(cls) in self._stack:
            return leaf("class", label, f"recursive {cls.__module__}.{cls.__qualname__}")
        with self._entering(cls, label):
            components: dict[str, HashNode] = {}
            for index, base in enumerate(cls.__bases__):
                if base is not object:
                    components[f"base {index}"] = self._component(f"base {index}", base)
            for name, attribute in vars(cls).items():
                if name in _CLASS_NOISE:
                    continue
                for part, value in _class_attribute_parts(name, attribute):
                    if isinstance(value, FunctionType) or not name.startswith("__"):
                        components[part] = self._component(part, value)
        node = HashNode("class", label, combine("class", components), components)
        return self._remember(cls, node)

    def module_node(self, module: ModuleType) -> HashNode:
        """The tree of a user module taken as a value: every name it defines.

        A function given the module (``fn_kwargs={"mod": helpers}``, a closure
        cell) may read any of its attributes, so all of them are hashed: its
        functions and classes by value, its other values by content. Only the
        import system's bookkeeping (``__file__``, ``__spec__``, ...) is left out.
        """
        remembered = self._nodes.get(id(module))
        if remembered is not None:
            return remembered
        label = f"<module {module.__name__}>"
        if id(module) in self._stack:
            return leaf("module", label, f"recursive {module.__name__}")
        with self._entering(module, label):
            components: dict[str, HashNode] = {}
            for name, value in sorted(vars(module).items()):
                if name.startswith("__") and not isinstance(value, FunctionType):
                    continue
                part = f"attribute '{name}'"
                components[part] = self._component(part, value)
        node = HashNode("module", label, combine("module", components), components)
        return self._remember(module, node)

    def _component(self, name: str, value: object) -> HashNode:
        self._path.append(name)
        try:
            if type(value) is FunctionType:
                return self.function_node(value)  # type: ignore[arg-type]
            if isinstance(value, type) and module_origin(value.__module__).by_value:
                return self.class_node(value)
            return self.describe(value)
        finally:
            self._path.pop()

    def _components_of(self, value: object) -> dict[str, HashNode] | None:
        """Named parts of composite callables, for explanations; None for leaves."""
        if type(value) is FunctionType:
            return dict(self.function_node(value).components)  # type: ignore[arg-type]
        if isinstance(value, type) and module_origin(value.__module__).by_value:
            return dict(self.class_node(value).components)
        if isinstance(value, ModuleType) and module_origin(value.__name__).by_value:
            return dict(self.module_node(value).components)
        if isinstance(value, functools.partial):
            partial: functools.partial[Any] = value
            parts = {"function": self._component("function", partial.func)}
            for index, argument in enumerate(partial.args):
                parts[f"argument {index}"] = self._component(f"argument {index}", argument)
            for name, argument in partial.keywords.items():
                parts[f"keyword '{name}'"] = self._component(f"keyword '{name}'", argument)
            return parts
        if isinstance(value, MethodType):
            return {
                "function": self._component("function", value.__func__),
                "self": self._component("self", value.__self__),
            }
        return None

    # -- bookkeeping --------------------------------------------------------

    def _remember(self, obj: object, node: HashNode) -> HashNode:
        self._nodes[id(obj)] = node
        self._keepalive.append(obj)
        return node

    def _entering(self, obj: object, label: str) -> _Entering:
        return _Entering(self, obj, label)

    def _unhashable(self, value: object, error: BaseException) -> UnhashableError:
        path = list(self._path) or [_label(value)]
        path += _locate_unpicklable(value)
        return UnhashableError(tuple(path), _reason(error))


class _Entering:
    """Push a function or class on the recursion stack and the error path."""

    def __init__(self, context: _HashContext, obj: object, label: str) -> None:
        self._context, self._obj, self._label = context, obj, label

    def __enter__(self) -> None:
        self._context._stack.append(id(self._obj))  # pyright: ignore[reportPrivateUsage]
        self._context._path.append(self._label)  # pyright: ignore[reportPrivateUsage]

    def __exit__(self, *_exc: object) -> None:
        self._context._stack.pop()  # pyright: ignore[reportPrivateUsage]
        self._context._path.pop()  # pyright: ignore[reportPrivateUsage]


def _resolve_global(chain: tuple[str, ...], namespace: Mapping[str, Any]) -> tuple[str, Any] | None:
    """Follow ``helpers.clean`` through the user's modules; None for builtins."""
    head = chain[0]
    if head not in namespace:
        if hasattr(builtins, head):
            return None
        return head, _Undefined(head)
    value = namespace[head]
    if value is getattr(builtins, head, _Undefined):
        # The builtin itself, bound as a global: what dill does to a `__main__` function it
        # ships by value (a Dask worker's copy reads `len` from its globals). Hashed as the
        # builtin it is, so the worker and the driver agree.
        return None
    name = head
    for attribute in chain[1:]:
        if not isinstance(value, ModuleType) or not module_origin(value.__name__).by_value:
            break
        if not hasattr(value, attribute):
            break
        value = getattr(value, attribute)
        name = f"{name}.{attribute}"
    return name, value


class _Undefined:
    """A global a function reads that does not exist (yet) when it is hashed."""

    def __init__(self, name: str) -> None:
        self.name = name


def _class_attribute_parts(name: str, attribute: object) -> Iterator[tuple[str, object]]:
    if isinstance(attribute, staticmethod | classmethod):
        yield f"method '{name}'", attribute.__func__
    elif isinstance(attribute, property):
        for accessor in ("fget", "fset", "fdel"):
            function = getattr(attribute, accessor)
            if function is not None:
                yield f"property '{name}'.{accessor}", function
    elif isinstance(attribute, FunctionType):
        yield f"method '{name}'", attribute
    else:
        yield f"attribute '{name}'", attribute


def _module_reference(name: str) -> str:
    origin = module_origin(name)
    return xxhash.xxh3_128_hexdigest(f"{name} {origin.kind} {origin.version}".encode())


def _ndarray_digest(array: Any) -> str:
    import numpy as np

    contiguous = np.ascontiguousarray(array)
    digest = xxhash.xxh3_128(f"{contiguous.dtype.str} {contiguous.shape}".encode())
    digest.update(contiguous.tobytes() if not contiguous.flags.c_contiguous else contiguous.data)
    return digest.hexdigest()


def _tensor_digest(tensor: Any, torch: Any) -> str | None:
    """A torch tensor's class, dtype, shape and bytes; None for a kind without plain bytes."""
    try:
        data = tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy()
    except (RuntimeError, TypeError, ValueError):  # sparse, quantized, meta tensors
        return None
    header = f"{type(tensor).__qualname__} {tensor.dtype} {tuple(tensor.shape)}"
    digest = xxhash.xxh3_128(header.encode())
    digest.update(data.data)
    return digest.hexdigest()


def _label(value: object) -> str:
    if isinstance(value, FunctionType | BuiltinFunctionType):
        return f"<function {value.__qualname__}>"
    if isinstance(value, type):
        return f"<class {value.__qualname__}>"
    if isinstance(value, ModuleType):
        return f"<module {value.__name__}>"
    if isinstance(value, functools.partial):
        return f"<partial {_label(value.func)}>"  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    text = repr(value) if type(value) in _ATOMIC else f"<{type(value).__qualname__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value: object) -> str:
    if isinstance(value, type):
        return "class"
    if isinstance(value, FunctionType):
        return "function"
    if isinstance(value, functools.partial):
        return "partial"
    if isinstance(value, MethodType):
        return "method"
    if isinstance(value, ModuleType):
        return "module"
    return "value"


def _reason(error: BaseException) -> str:
    return str(error) or type(error).__name__


def _locate_unpicklable(value: object, depth: int = 3) -> list[str]:
    """The attribute or item path inside ``value`` that fails to pickle, best effort."""
    if depth == 0:
        return []
    parts: Iterable[tuple[str, object]]
    if isinstance(value, dict):
        items: dict[Any, Any] = value  # type: ignore[assignment]
        parts = ((f"key {key!r}", item) for key, item in items.items())
    elif isinstance(value, list | tuple):
        sequence: list[Any] = list(value)  # type: ignore[arg-type]
        parts = ((f"item {index}", item) for index, item in enumerate(sequence))
    elif hasattr(value, "__dict__") and not isinstance(value, type | ModuleType | FunctionType):
        parts = ((f"attribute '{name}'", item) for name, item in vars(value).items())
    else:
        return []
    for name, item in parts:
        try:
            _HashPickler(_DigestWriter(), _HashContext()).dump(item)
        except Exception:
            return [name, *_locate_unpicklable(item, depth - 1)]
    return []


def hash_value(value: object) -> str:
    """Hash any value (see `Hasher.hash`)."""
    return _HashContext().digest(value)


def arrow_value_hash(digest: str) -> str:
    """`hash_value` of an Arrow table or array whose `arrow_digest` is ``digest``.

    What hashing rows read a batch at a time (`ColumnDigests.table_hexdigest`) gives,
    without holding them all.
    """
    return hash_value(_placeholder("arrow", digest))


def describe_value(value: object) -> HashNode:
    """The hash tree of any value; its root digest equals `hash_value`."""
    return _HashContext().describe(value)


def _compiled_original(function: FunctionType) -> object | None:
    """The function ``torch.compile`` wrapped, when ``function`` is such a wrapper."""
    if "torch" not in sys.modules:
        return None
    original: object | None = getattr(function, "_torchdynamo_orig_callable", None)
    return original

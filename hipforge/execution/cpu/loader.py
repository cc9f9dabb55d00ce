"""Load a built candidate as a Python module.

Bridge builds export ``hipforge_fn_<f>`` (see hipforge_bridge.h); each becomes a module
attribute that converts its Python arguments the way pybind11's casters would. Full builds
are ordinary pybind11 extensions and load through importlib.
"""

from __future__ import annotations

import ctypes
import numbers
import os
import types
from collections.abc import Callable
from pathlib import Path

NONE, TENSOR, INT, FLOAT, BOOL, INT_LIST, FLOAT_LIST, TENSOR_LIST, STRING, LIST, TUPLE = range(11)
_ERRORS = {1: TypeError, 2: ValueError, 3: IndexError, 4: RuntimeError, 5: NotImplementedError}


class Value(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int32),
        ("pad", ctypes.c_int32),
        ("i", ctypes.c_int64),
        ("d", ctypes.c_double),
        ("p", ctypes.c_void_p),
        ("n", ctypes.c_int64),
    ]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def _pack(arg: object, slot: Value, keep: list) -> None:
    import torch

    if isinstance(arg, torch.Tensor):
        slot.kind, slot.p = TENSOR, arg._cdata
    elif arg is None:
        slot.kind = NONE
    elif isinstance(arg, bool):
        slot.kind, slot.i = BOOL, int(arg)
    elif isinstance(arg, numbers.Integral):
        slot.kind, slot.i = INT, int(arg)
    elif isinstance(arg, numbers.Real):
        slot.kind, slot.d = FLOAT, float(arg)
    elif isinstance(arg, str):
        data = arg.encode()
        keep.append(data)
        slot.kind, slot.p, slot.n = STRING, ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p), len(data)
    elif isinstance(arg, (list, tuple)):
        items = list(arg)
        if items and all(isinstance(x, torch.Tensor) for x in items):
            arr = (ctypes.c_void_p * len(items))(*[x._cdata for x in items])
            slot.kind = TENSOR_LIST
        elif all(isinstance(x, numbers.Integral) for x in items):
            arr = (ctypes.c_int64 * len(items))(*[int(x) for x in items])
            slot.kind = INT_LIST
        elif all(isinstance(x, numbers.Real) for x in items):
            arr = (ctypes.c_double * len(items))(*[float(x) for x in items])
            slot.kind = FLOAT_LIST
        else:
            raise TypeError(f"unsupported list argument: {arg!r}")
        keep.append(arr)
        slot.p, slot.n = ctypes.cast(arr, ctypes.c_void_p), len(items)
    else:
        raise TypeError(f"unsupported argument type {type(arg).__name__}")


def _unpack(v: Value) -> object:
    import torch

    if v.kind == TENSOR:
        return torch._C._wrap_tensor_impl(_capsule_new(v.p, None, None))
    if v.kind == INT:
        return v.i
    if v.kind == FLOAT:
        return v.d
    if v.kind == BOOL:
        return bool(v.i)
    if v.kind == STRING:
        return ctypes.string_at(v.p, v.n).decode()
    if v.kind in (LIST, TUPLE):
        items = [_unpack(x) for x in (Value * v.n).from_address(v.p)]
        return tuple(items) if v.kind == TUPLE else items
    return None


def _make_call(lib: ctypes.PyDLL, name: str, doc: str) -> Callable:
    fn = getattr(lib, f"hipforge_fn_{name}")
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(Value), ctypes.c_int64, ctypes.POINTER(Value)]
    last_error = lib.hipforge_last_error
    last_error.restype = ctypes.c_char_p
    free_value = lib.hipforge_free_value
    free_value.argtypes = [ctypes.POINTER(Value)]

    def call(*args: object) -> object:
        slots = (Value * max(len(args), 1))()
        keep: list = []
        for i, a in enumerate(args):
            _pack(a, slots[i], keep)
        ret = Value()
        rc = fn(slots, len(args), ctypes.byref(ret))
        if rc:
            raise _ERRORS.get(rc, RuntimeError)(last_error().decode(errors="replace"))
        try:
            return _unpack(ret)
        finally:
            free_value(ctypes.byref(ret))

    call.__name__ = call.__qualname__ = name
    call.__doc__ = doc
    return call


def unsupported_functions(so_path: Path, functions: dict[str, str]) -> list[str]:
    lib = ctypes.PyDLL(str(so_path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
    return [f for f in functions if not getattr(lib, f"hipforge_ok_{f}")()]


def load_bridge_module(name: str, so_path: Path, functions: dict[str, str]) -> types.ModuleType:
    lib = ctypes.PyDLL(str(so_path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
    mod = types.ModuleType(name, f"hipforge cpu build of {name}")
    mod.__file__ = str(so_path)
    mod._hipforge_lib = lib  # keeps the library loaded as long as the module lives
    for fname, doc in functions.items():
        setattr(mod, fname, _make_call(lib, fname, doc))
    return mod



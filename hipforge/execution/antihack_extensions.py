"""The candidate's extension modules, wrapped in its process: calls into them counted, and in poison mode
their results (and the arguments they write) replaced by noise."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any


class Extensions:
    """Counts calls into the candidate's extension modules; in poison mode their results become noise."""

    def __init__(self) -> None:
        self.modules: list[str] = []
        self.calls = 0
        self.poison = False

    def wrap(self, module: types.ModuleType) -> types.ModuleType:
        proxy = types.ModuleType(getattr(module, "__name__", "extension"))
        self.modules.append(proxy.__name__)
        for name in dir(module):
            value = getattr(module, name)
            public = callable(value) and not name.startswith("_")
            setattr(proxy, name, self._wrap(value) if public else value)
        return proxy

    def _wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if not self.poison:
                return fn(*args, **kwargs)
            import torch

            copies = [(a, a.clone()) for a in args if isinstance(a, torch.Tensor)]
            out = fn(*args, **kwargs)
            for arg, copy in copies:  # an output written into an argument is poisoned in place
                if not torch.equal(arg, copy):
                    _poison_(arg)
            return _poisoned(out)

        call.__name__ = call.__qualname__ = getattr(fn, "__name__", "extension_function")
        call.__doc__ = fn.__doc__
        return call


def _poison_(t: Any) -> None:
    import torch

    if t.is_floating_point() or t.is_complex():
        # random finite values, not NaN: ``torch_result + 0 * kernel_result`` keeps a NaN's trace but not these.
        # Drawn in place: temporaries the size of a KernelBench output each are what the device lacks
        t.normal_(7.0, 1e3)
    elif t.dtype == torch.bool:
        t.logical_not_()
    else:
        t.fill_(-12345 if t.dtype.is_signed else 123)


def _poisoned(out: Any) -> Any:
    import torch

    if isinstance(out, torch.Tensor):
        poisoned = out.clone()
        _poison_(poisoned)
        return poisoned
    if isinstance(out, tuple | list):
        return type(out)(_poisoned(x) for x in out)
    return out

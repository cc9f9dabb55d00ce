"""Tensors across the sandbox boundary: raw bytes behind a small JSON header, one file per tensor.

The reader trusts nothing in the file: the caller says which dtype and shape it expects and how many
bytes that is at most, and gets a private copy, so a writer that keeps the file open cannot change it.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

HEADER = struct.Struct("<I")


def write(path: Path, tensor: Any) -> None:
    import torch

    data = tensor.detach().contiguous().cpu()
    header = json.dumps({"dtype": str(data.dtype).removeprefix("torch."), "shape": list(data.shape)}).encode()
    raw = data.reshape(-1).view(torch.uint8).numpy() if data.numel() else b""
    with open(path, "wb") as f:
        f.write(HEADER.pack(len(header)) + header)
        f.write(memoryview(raw))


def numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def meta(tensor: Any) -> dict[str, Any]:
    return {"dtype": str(tensor.dtype).removeprefix("torch."), "shape": list(tensor.shape)}


class BadTensorFile(ValueError):
    """The file is not the tensor it claims, or not the one expected."""


def read(path: Path, expected: dict[str, Any] | None = None) -> Any:
    """A private CPU copy of the tensor in ``path``; with ``expected`` ({dtype, shape}) it must match it."""
    import torch

    with open(path, "rb") as f:
        (length,) = HEADER.unpack(f.read(HEADER.size))
        if length > 1 << 16:
            raise BadTensorFile(f"{path.name}: header of {length} bytes")
        head = json.loads(f.read(length))
        dtype = getattr(torch, str(head.get("dtype")), None)
        shape = head.get("shape")
        if not isinstance(dtype, torch.dtype) or not isinstance(shape, list) or not all(
                isinstance(d, int) and d >= 0 for d in shape):
            raise BadTensorFile(f"{path.name}: not a tensor header: {head}")
        if expected is not None and (head["dtype"] != expected["dtype"] or shape != expected["shape"]):
            raise BadTensorFile(f"output {shape} {head['dtype']}, reference {expected['shape']} {expected['dtype']}")
        nbytes = numel(shape) * torch.empty((), dtype=dtype).element_size()
        data = bytearray(f.read(nbytes + 1))
    if len(data) != nbytes:
        raise BadTensorFile(f"{path.name}: {len(data)} bytes of data where {nbytes} were declared")
    if not nbytes:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(data, dtype=torch.uint8).view(dtype).reshape(shape)

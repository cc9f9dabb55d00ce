"""How each value of a fused reduction group is indexed inside its kernel.

Every value is `full` (one per element of the reduced shape), `col` (varies only along the reduced
dims), `row` (one per row: reductions and math on them), `uniform` (one scalar) or `bcast` (varies
over one contiguous run of dims of the reduced shape: a per-channel statistic, a bias).
"""

from __future__ import annotations

from dataclasses import dataclass

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.values import Val
from hipforge.translate.kernels.elementwise import broadcast_span

PER_ELEMENT = ("full", "col", "bcast")  # computed inside the row loop


@dataclass(frozen=True)
class Domain:
    """The reduction a group performs: dims [dim, dim + span) of `shape` (dim None: all of them)."""

    dim: int | None
    span: int
    shape: tuple[int, ...]

    @property
    def keep(self) -> tuple[int, ...]:
        if self.dim is None:
            return (1,) * len(self.shape)
        return tuple(1 if self.dim <= k < self.dim + self.span else s for k, s in enumerate(self.shape))


def domain_of(members: list[Val]) -> Domain:
    domains = {Domain(r.dim, r.span, r.args[0].shape) for r in members if r.op == "reduce"}
    if len(domains) != 1:
        raise Untranslatable("reductions over different dims in one fused group")
    return domains.pop()


def input_class(v: Val, d: Domain) -> str:
    shape, keep = d.shape, d.keep
    padded = (1,) * (len(shape) - len(v.shape)) + v.shape
    if padded == shape:
        return "full"
    if all(s == 1 for s in padded):
        return "uniform"
    if padded == keep and v.shape == keep:
        return "row"
    if d.dim is not None and all((padded[k] == shape[k]) if d.dim <= k < d.dim + d.span else padded[k] == 1
                                 for k in range(len(shape))):
        return "col"
    broadcast_span(v.shape, shape)  # raises when the operand's dims are not one contiguous run
    return "bcast"


def member_class(m: Val, cls: dict[int, str], d: Domain) -> str:
    if m.op == "reduce":
        if cls[id(m.args[0])] != "full":
            raise Untranslatable("a reduction of a broadcast operand")
        return "row"
    kinds = {cls[id(a)] for a in m.operands()}
    if kinds & set(PER_ELEMENT):
        if m.shape == d.shape:
            return "full"
        if kinds & {"full", "col"} or any(cls[id(a)] == "row" for a in m.operands()):
            raise Untranslatable(f"a per-row value of shape {m.shape} broadcast against {d.shape}")
        return "bcast"
    return "row" if "row" in kinds else "uniform"


def classify(members: list[Val], inputs: list[Val], out: Val) -> tuple[Domain, dict[int, str]]:
    """The group's reduction domain and every value's class; Untranslatable when the group cannot be one kernel."""
    d = domain_of(members)
    cls = {id(v): input_class(v, d) for v in inputs}
    for m in members:
        cls[id(m)] = member_class(m, cls, d)
        if m.integer and m is not out:
            raise Untranslatable("math on the result of argmax/argmin")
        if "row_index" in m.extra and (d.dim != m.extra["row_index"] or d.span != 1):
            raise Untranslatable("an index along a dim that the group does not reduce")
    if cls[id(out)] == "bcast":
        raise Untranslatable(f"a fused group whose result of shape {out.shape} is a broadcast operand")
    if not any(cls[id(v)] == "full" for v in inputs):
        raise Untranslatable(f"no operand of the fused group has the reduced shape {d.shape}")
    return d, cls


def closure(target: Val, members: list[Val], cls: dict[int, str]) -> set[int]:
    """Ids of the per-element values `target` depends on: per-element members (recomputed inside a row
    loop) and the per-element inputs they read."""
    member_ids = {id(m) for m in members}
    need: set[int] = set()
    stack = [target]
    while stack:
        v = stack.pop()
        if id(v) not in need and cls[id(v)] in PER_ELEMENT:
            need.add(id(v))
            if id(v) in member_ids:
                stack.extend(v.operands())
    return need


def out_shape(out: Val, full: bool, anchor: str, d: Domain) -> str:
    rank = len(d.shape)
    if full:
        return f"{anchor}.sizes()"
    if d.dim is None:  # a full reduction: () or, with keepdim, all ones
        return f"std::vector<int64_t>({len(out.shape)}, 1)"
    kept = len(out.shape) == rank
    reduced = range(d.dim, d.dim + d.span)
    sizes = ["1" if k in reduced else f"{anchor}.size({k})" for k in range(rank) if kept or k not in reduced]
    return "std::vector<int64_t>{" + ", ".join(sizes) + "}"

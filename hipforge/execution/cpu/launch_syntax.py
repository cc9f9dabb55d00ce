"""The kernel launch syntax ``k<<<grid, block[, shmem[, stream]]>>>(args)`` (template kernels and
parenthesised kernel expressions too) as a call of ``hip_cpu::launch`` that runs ``k(args)`` once per GPU
thread. Whitespace and newlines are kept, so line numbers stay the candidate's own."""

from __future__ import annotations

from hipforge.execution.cpu.cxx_scan import match_forward, split_top_level


def _space_before(m: str, j: int) -> int:
    """`j` moved back over whitespace."""
    while j > 0 and m[j - 1].isspace():
        j -= 1
    return j


def _opener_before(m: str, j: int, opener: str, closer: str) -> int:
    """Index of the `opener` matching the `closer` at m[j - 1]; 0 when unbalanced."""
    depth = 0
    while j > 0:
        c = m[j - 1]
        if c == closer:
            depth += 1
        elif c == opener:
            depth -= 1
            if depth == 0:
                return j - 1
        j -= 1
    return 0


def _kernel_start(m: str, end: int) -> int:
    """Start of the kernel expression that ends just before index `end` (the `<<<`)."""
    j = _space_before(m, end)
    if j > 0 and m[j - 1] == ">":  # template arguments
        j = _space_before(m, _opener_before(m, j, "<", ">"))
    if j > 0 and m[j - 1] == ")":  # (kernel_expression)
        return _opener_before(m, j, "(", ")")
    # identifier chain a::b::c
    while True:
        k = j
        while k > 0 and (m[k - 1].isalnum() or m[k - 1] == "_"):
            k -= 1
        if k == j:
            return j
        j = k
        t = _space_before(m, j)
        if t >= 2 and m[t - 2 : t] == "::":
            j = _space_before(m, t - 2)
            continue
        return j


def launch_edits(src: str, m: str) -> list[tuple[int, int, str]]:
    """(start, end, replacement) for every launch in `src`; `m` is its masked text."""
    edits = []
    pos = 0
    while True:
        a = m.find("<<<", pos)
        if a < 0:
            return edits
        pos = a + 3
        # the matching >>> at bracket depth 0
        depth, b = 0, -1
        for j in range(a + 3, len(m) - 2):
            c = m[j]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
            elif depth == 0 and m.startswith(">>>", j):
                b = j
                break
        if b < 0:
            continue
        p = b + 3
        while p < len(m) and m[p].isspace():
            p += 1
        if p >= len(m) or m[p] != "(":
            continue
        q = match_forward(m, p)
        if q < 0:
            continue
        k0 = _kernel_start(m, a)
        k1 = k0 + len(src[k0:a].rstrip())
        kexpr = src[k0:k1]
        if not kexpr:
            continue
        cfg = split_top_level(src[a + 3 : b])
        if not 2 <= len(cfg) <= 4 or any(not c.strip() for c in cfg):
            continue
        cfg += ["0"] * (4 - len(cfg))
        args = src[p + 1 : q - 1]
        kname = " ".join(kexpr.split()).replace("\\", "\\\\").replace('"', '\\"')
        # whitespace between the pieces (newlines, line continuations) moves to the front
        gaps = src[k1:a] + src[b + 3 : p]
        text = (
            f'::hip_cpu::launch({gaps}"{kname}", __FILE__, __LINE__, {cfg[0]}, {cfg[1]}, {cfg[2]}, {cfg[3]}, '
            f"[&](auto&... hipcpu_args_) {{ {kexpr}(hipcpu_args_...); }}"
            + (f", {args}" if args.strip() else "")
            + ")"
        )
        edits.append((k0, q, text))
        pos = q

"""The write recorder: a seccomp filter in the job that sends every syscall able to write the filesystem to a
supervisor thread in the (trusted) fork server, which refuses and records those outside the job's own
directories. Native code cannot get around it: the kernel stops the syscall before it runs, whatever
called it. The mount namespace already makes the rest of the filesystem read-only; the recorder is what
turns a prevented write into evidence (and, without namespaces, what prevents it).

A job that asks for no processes (the candidate's: a child process's work is outside the candidate's
process CPU clock) also sends fork, vfork and every clone that does not make a thread to the supervisor,
which refuses and records them; clone3 fails with ENOSYS in the filter itself (its flags are behind a
pointer the filter cannot read; glibc then makes its threads with clone). Threads stay allowed.

x86-64 only (the syscall numbers); elsewhere ``supported()`` is False and jobs run without it. A syscall of
another ABI (int 0x80's i386 numbers, x32) goes to the supervisor and is refused.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import select
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

AUDIT_ARCH_X86_64 = 0xC000003E
RET_ALLOW, RET_NOTIFY, RET_ERRNO = 0x7FFF0000, 0x7FC00000, 0x00050000
SET_MODE_FILTER, GET_NOTIF_SIZES, FLAG_NEW_LISTENER, NOTIF_FLAG_CONTINUE = 1, 3, 1 << 3, 1
SYS_SECCOMP = 317
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
AT_FDCWD = -100
# syscall -> (name, indices of its (dirfd, path) pairs; dirfd None: relative to the cwd)
PATHS: dict[int, tuple[str, list[tuple[int | None, int]]]] = {
    2: ("open", [(None, 0)]), 257: ("openat", [(0, 1)]), 437: ("openat2", [(0, 1)]), 85: ("creat", [(None, 0)]),
    83: ("mkdir", [(None, 0)]), 258: ("mkdirat", [(0, 1)]), 87: ("unlink", [(None, 0)]),
    263: ("unlinkat", [(0, 1)]), 84: ("rmdir", [(None, 0)]), 82: ("rename", [(None, 0), (None, 1)]),
    264: ("renameat", [(0, 1), (2, 3)]), 316: ("renameat2", [(0, 1), (2, 3)]), 86: ("link", [(None, 1)]),
    265: ("linkat", [(2, 3)]), 88: ("symlink", [(None, 1)]), 266: ("symlinkat", [(1, 2)]),
    76: ("truncate", [(None, 0)]), 90: ("chmod", [(None, 0)]), 268: ("fchmodat", [(0, 1)]),
    92: ("chown", [(None, 0)]), 94: ("lchown", [(None, 0)]), 260: ("fchownat", [(0, 1)]),
    133: ("mknod", [(None, 0)]), 259: ("mknodat", [(0, 1)]), 280: ("utimensat", [(0, 1)]),
}
DENY_ALWAYS = {425: "io_uring_setup", 304: "open_by_handle_at"}  # writes the recorder could not see
OPEN_FLAGS_ARG = {2: 1, 257: 2}  # open/openat: only writing opens go to the supervisor
# a job without processes: these go to the supervisor (clone only without CLONE_THREAD), clone3 fails in the filter
SPAWNS = {56: "clone", 57: "fork", 58: "vfork"}
SYS_CLONE, SYS_CLONE3, CLONE_THREAD = 56, 435, 0x10000
SPAWNS_KEPT = 32  # records kept of a job that tries again and again


def supported() -> bool:
    return platform.machine() == "x86_64" and platform.system() == "Linux"


def _program(no_processes: bool = False) -> bytes:
    """The BPF filter: allow everything but writing opens and the syscalls in PATHS / DENY_ALWAYS (and, for a
    job without processes, fork, vfork and clone without CLONE_THREAD; clone3 fails with ENOSYS)."""
    ld, jeq, jset, jge, ret = 0x20, 0x15, 0x45, 0x35, 0x06
    code: list[tuple[int, int | str, int | str, int]] = [(ld, 0, 0, 4), (jeq, 0, "notify", AUDIT_ARCH_X86_64),
                                                          (ld, 0, 0, 0), (jge, "notify", 0, 0x40000000)]
    if no_processes:
        code += [(jeq, "enosys", 0, SYS_CLONE3), (jeq, "clone", 0, SYS_CLONE)]
        code += [(jeq, "notify", 0, nr) for nr in SPAWNS if nr != SYS_CLONE]
    for nr in OPEN_FLAGS_ARG:
        code.append((jeq, f"open{nr}", 0, nr))
    for nr in [n for n in PATHS if n not in OPEN_FLAGS_ARG] + list(DENY_ALWAYS):
        code.append((jeq, "notify", 0, nr))
    code.append((ret, 0, 0, RET_ALLOW))
    labels = {}
    for nr, arg in OPEN_FLAGS_ARG.items():
        labels[f"open{nr}"] = len(code)
        code += [(ld, 0, 0, 16 + 8 * arg), (jset, "notify", "allow", WRITE_FLAGS)]
    if no_processes:
        labels["clone"] = len(code)  # its flags are arg0 (CLONE_THREAD is in the low word)
        code += [(ld, 0, 0, 16), (jset, "allow", "notify", CLONE_THREAD)]
        labels["enosys"] = len(code)
        code.append((ret, 0, 0, RET_ERRNO | errno.ENOSYS))
    labels["notify"], labels["allow"] = len(code), len(code) + 1
    code += [(ret, 0, 0, RET_NOTIFY), (ret, 0, 0, RET_ALLOW)]

    def offset(at: int, target: int | str) -> int:
        return target if isinstance(target, int) else labels[target] - at - 1

    return b"".join(struct.pack("=HBBI", op, offset(i, jt), offset(i, jf), k)
                    for i, (op, jt, jf, k) in enumerate(code))


def install(no_processes: bool = False) -> int:
    """In the job, after no-new-privs: install the filter; returns the listener fd for the supervisor."""
    prog = _program(no_processes)
    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = struct.pack("=HxxxxxxQ", len(prog) // 8, ctypes.addressof(buf))
    fbuf = ctypes.create_string_buffer(fprog, len(fprog))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(ctypes.c_long(SYS_SECCOMP), ctypes.c_long(SET_MODE_FILTER), ctypes.c_long(FLAG_NEW_LISTENER),
                      fbuf)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "seccomp filter install failed")
    return int(fd)


def offer(sock: socket.socket, no_processes: bool = False) -> bool:
    """In the job: install the filter and hand its listener to the server; where the kernel has no user
    notifications (gVisor, say), tell the server so and run without the recorder."""
    try:
        fd = install(no_processes)
    except OSError:
        sock.send(b"-")
        return False
    socket.send_fds(sock, [b"x"], [fd])
    os.close(fd)
    return True


@dataclass
class Recorder:
    """The supervisor side: answers the job's notifications until every process of the job is gone.
    ``spawned`` is told of the job's first refused process (before the job's syscall returns)."""

    listener: int
    allowed: list[str]
    spawned: Callable[[str], None] | None = None
    writes: list[str] = field(default_factory=list)
    spawns: list[str] = field(default_factory=list)  # processes it tried to start (refused; the first few)
    thread: threading.Thread | None = None

    @classmethod
    def receive(cls, sock: socket.socket, allowed: list[str],
                spawned: Callable[[str], None] | None = None) -> Recorder | None:
        """The job's listener, or None if it could not install a filter (or died before it did)."""
        _, fds, _, _ = socket.recv_fds(sock, 16, 1)
        if not fds:
            return None
        recorder = cls(fds[0], [os.path.normpath(a) for a in allowed], spawned)
        recorder.thread = threading.Thread(target=recorder._serve, daemon=True)
        recorder.thread.start()
        return recorder

    def finish(self) -> list[str]:
        if self.thread:
            self.thread.join(timeout=5)
        try:
            os.close(self.listener)
        except OSError:
            pass
        return self.writes

    def _serve(self) -> None:
        import fcntl

        libc = ctypes.CDLL(None, use_errno=True)
        sizes = (ctypes.c_uint16 * 3)()
        libc.syscall(ctypes.c_long(SYS_SECCOMP), ctypes.c_long(GET_NOTIF_SIZES), ctypes.c_long(0), sizes)
        notif_size, resp_size = sizes[0], sizes[1]
        recv = 0xC0000000 | (notif_size << 16) | (ord("!") << 8)
        send = 0xC0000000 | (resp_size << 16) | (ord("!") << 8) | 1
        while True:
            ready = select.poll()
            ready.register(self.listener, select.POLLIN | select.POLLHUP)
            events = ready.poll(1000)
            if any(ev & select.POLLHUP for _, ev in events):
                return  # every process of the job has exited
            if not events:
                continue
            buf = bytearray(notif_size)
            try:
                fcntl.ioctl(self.listener, recv, buf)
            except OSError as e:
                if e.errno in (errno.ENOENT, errno.EINTR):
                    continue
                return
            ident, pid, _, nr, arch, _ = struct.unpack_from("=QIIiIQ", buf)
            args = struct.unpack_from("=6Q", buf, 32)
            refusal = self._judge(pid, nr, arch, args)  # an errno, or 0
            error, flags = (-refusal, 0) if refusal else (0, NOTIF_FLAG_CONTINUE)
            resp = struct.pack("=QqiI", ident, 0, error, flags)
            try:
                fcntl.ioctl(self.listener, send, bytearray(resp.ljust(resp_size, b"\0")))
            except OSError:
                continue  # the process died meanwhile

    def _judge(self, pid: int, nr: int, arch: int, args: tuple[int, ...]) -> int:
        """The errno that refuses a write outside the allowed dirs or a process (recorded); 0 allows."""
        if arch != AUDIT_ARCH_X86_64:
            self.writes.append(f"syscall {nr} of another ABI (arch {arch:#x})")
            return errno.EACCES
        if nr in SPAWNS:  # only a job without processes sends these (clone: without CLONE_THREAD)
            what, first = f"clone(flags={args[0]:#x})" if nr == SYS_CLONE else f"{SPAWNS[nr]}()", not self.spawns
            if len(self.spawns) < SPAWNS_KEPT:
                self.spawns.append(what)
            if first and self.spawned is not None:
                self.spawned(what)
            return errno.EPERM
        if nr in DENY_ALWAYS:
            self.writes.append(f"{DENY_ALWAYS[nr]}()")
            return errno.EACCES
        name, pairs = PATHS.get(nr, (f"syscall {nr}", []))
        for dirfd_arg, path_arg in pairs:
            try:
                path = _read_string(pid, args[path_arg])
                base = _base(pid, AT_FDCWD if dirfd_arg is None else ctypes.c_int32(args[dirfd_arg]).value)
                where = _resolve(pid, os.path.join(base, path))
            except OSError:
                where = None
            if where is not None and name.startswith("mkdir") and os.path.lexists(f"/proc/{pid}/root{where}"):
                continue  # makedirs(exist_ok=True) on a directory that is there writes nothing
            if where is None or not any(where == a or where.startswith(a + "/") for a in self.allowed):
                self.writes.append(f"{name}({where or '<unreadable path>'})")
                return errno.EACCES
        return 0


def _read_string(pid: int, address: int, limit: int = 4096) -> str:
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        mem.seek(address)
        data = mem.read(limit)
    return os.fsdecode(data.split(b"\0", 1)[0])


def _base(pid: int, dirfd: int) -> str:
    return os.readlink(f"/proc/{pid}/cwd" if dirfd == AT_FDCWD else f"/proc/{pid}/fd/{dirfd}")


def _resolve(pid: int, path: str, depth: int = 0) -> str:
    """``path`` as the job sees it, symlinks followed inside the job's own root (not ours)."""
    root = f"/proc/{pid}/root"
    parts, done = os.path.normpath(path).split("/")[1:], "/"
    for i, part in enumerate(parts):
        candidate = os.path.join(done, part)
        try:
            target = os.readlink(root + candidate)
        except OSError:  # not a link (or not there yet: a file being created)
            done = candidate
            continue
        if depth > 16:
            raise OSError(errno.ELOOP, "too many links")
        rest = "/".join(parts[i + 1:])
        joined = os.path.join(target if target.startswith("/") else os.path.join(done, target), rest)
        return _resolve(pid, joined, depth + 1)
    return os.path.normpath(done)

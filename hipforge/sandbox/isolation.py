"""Inside a job's fork, before any job code runs: namespaces, mounts, rlimits, uid drop, write recorder.

With root and namespaces: a mount namespace where only the work dir (a fresh tmpfs), the out dir (shared
with the caller) and, for jobs that build, the build cache are writable, the rest of the filesystem
read-only; rlimits; no-new-privs; an unprivileged uid. Without them: rlimits, and the write recorder
(seccomp) as the file guard. Either way a job that asks for it gets the recorder, which refuses and
records every write outside its own directories, native code included.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from hipforge.sandbox.env import PROJECT_ROOT

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 4096, 8192, 16384, 1 << 18
CLONE_NEWNS, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 0x20000, 36, 38
KEEP_WRITABLE = ("/proc", "/sys", "/dev")  # pseudo filesystems; the sandbox user cannot write them anyway


def enter_isolation(job: dict[str, Any]) -> list[str]:
    """Called in the job's fork, before any job code: returns the mechanisms now in force."""
    import resource

    os.setpgid(0, 0)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails with EFBIG instead of killing
    work, cache, ns = job["workdir"], job["cache_dir"], job["mode"] == "namespaces"
    mechanisms = ["process-per-job", "scrubbed-env", "private-workdir"]
    os.makedirs(cache, exist_ok=True)
    if ns:
        os.chown(cache, -1, job["gid"])
        os.chmod(cache, 0o3775)  # root keeps the cache; the sandbox group may add entries, never touch others'
        os.chown(job["outdir"], job["uid"], job["gid"])
        mechanisms += ["netns", "pidns", "mountns", *_private_mounts(job)]
    limits = {resource.RLIMIT_CORE: 0, resource.RLIMIT_FSIZE: job["max_file_mb"] << 20}
    if job["address_limit_mb"]:  # the job's budget on top of the address space it inherits (torch's)
        limits[resource.RLIMIT_AS] = _address_space() + (job["address_limit_mb"] << 20)
    if ns or os.geteuid() != 0:  # root ignores RLIMIT_NPROC
        limits[resource.RLIMIT_NPROC] = job["max_processes"] + (0 if ns else _tasks_of(os.getuid()))
    for key, value in limits.items():
        resource.setrlimit(key, (value, value))
    names = {resource.RLIMIT_CORE: "core", resource.RLIMIT_FSIZE: "fsize", resource.RLIMIT_AS: "as",
             resource.RLIMIT_NPROC: "nproc"}
    mechanisms.append("rlimit:" + ",".join(names[k] for k in limits))
    libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # setuid binaries stay unprivileged; seccomp needs it
    mechanisms.append("no-new-privs")
    if ns:
        os.setgroups([])
        os.setgid(job["gid"])
        os.setuid(job["uid"])
        mechanisms.append(f"uid:{job['uid']}")
    os.umask(0o002)
    os.chdir(work)
    os.makedirs("tmp", exist_ok=True)
    # torch.compile's caches: inductor pins its dir in the environment on first use (the warm server's /tmp,
    # read-only here), so name per-job writable ones explicitly. Inductor compiles in the job's own process:
    # a pool of compile workers per job would exhaust RLIMIT_NPROC, which every slot's jobs share.
    os.environ.update(HOME=work, TMPDIR=f"{work}/tmp", PWD=work, USER="sandbox", LOGNAME="sandbox",
                      TORCHINDUCTOR_CACHE_DIR=f"{work}/tmp/inductor", TRITON_CACHE_DIR=f"{work}/tmp/triton",
                      TORCHINDUCTOR_COMPILE_THREADS="1", HIPFORGE_COMPILE_CACHE=cache,
                      HIPFORGE_COMPILE_CACHE_READONLY="" if job["cache_writable"] else "1", **job.get("env", {}))
    tempfile.tempdir = None
    return mechanisms


def writable_dirs(job: dict[str, Any]) -> list[str]:
    """Where a job may write: its work dir, its out dir, the build cache for build jobs; devices and its own
    /proc entries (the CUDA runtime names its threads through /proc/self/task/*/comm)."""
    dirs = [job["workdir"], job["outdir"], "/dev", "/proc"]
    return dirs + ([job["cache_dir"]] if job["cache_writable"] else [])


def _private_mounts(job: dict[str, Any]) -> list[str]:
    """A mount namespace where only the work dir (a fresh tmpfs), the out dir and (build jobs) the build cache
    are writable."""
    work, cache, out = job["workdir"], job["cache_dir"], job["outdir"]
    if libc().unshare(CLONE_NEWNS) != 0:
        raise OSError("unshare(CLONE_NEWNS) failed")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", work, "tmpfs", MS_NOSUID | MS_NODEV,
           f"size={job['tmp_size_mb']}m,mode=0700,uid={job['uid']},gid={job['gid']}")
    _expose({os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, PROJECT_ROOT)}, work)
    _mount(out, out, None, MS_BIND)
    writable = [work, out]
    if job["cache_writable"]:
        _mount(cache, cache, None, MS_BIND)
        writable.append(cache)
    failed = []
    for point, keep in _mountpoints():
        if point in writable or point.startswith((work + "/", *KEEP_WRITABLE)):
            continue
        try:
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | keep)
        except OSError:
            failed.append(point)
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=1m")
    return ["readonly-root", "tmpfs-workdir"] + [f"still-writable:{p}" for p in failed]


def _expose(paths: set[str], scratch: str) -> None:
    """Keep paths the sandbox user needs (the interpreter under a 0700 /root) reachable: hold them
    aside, cover their closed ancestor with an empty tmpfs (hiding the rest of it), put them back."""
    blocked: dict[str, list[str]] = {}
    for path in sorted(paths):
        parts = Path(path).parts
        closed = next((os.path.join(*parts[:i]) for i in range(2, len(parts) + 1)
                       if not os.stat(os.path.join(*parts[:i])).st_mode & 0o001), None)
        if closed and not any(path.startswith(p + "/") for p in blocked.get(closed, [])):
            blocked.setdefault(closed, []).append(path)
    for n, (closed, subs) in enumerate(blocked.items()):
        holds = [(os.path.join(scratch, f".hold{n}.{m}"), sub) for m, sub in enumerate(subs)]
        for hold, sub in holds:
            os.mkdir(hold)
            _mount(sub, hold, None, MS_BIND | MS_REC)
        _mount("tmpfs", closed, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
        for hold, sub in holds:
            os.makedirs(sub, exist_ok=True)
            _mount(hold, sub, None, MS_MOVE)
            os.rmdir(hold)


def _mountpoints() -> list[tuple[str, int]]:
    """(mount point, nosuid/nodev/noexec flags to keep) for every mount, from /proc/self/mountinfo."""
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            opts = fields[5].split(",")
            flags = (("nosuid", MS_NOSUID), ("nodev", MS_NODEV), ("noexec", MS_NOEXEC))
            keep = sum(flag for name, flag in flags if name in opts)
            points.append((fields[4].encode().decode("unicode_escape"), keep))
    return points


def libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    import ctypes

    def enc(s: str | None) -> bytes | None:
        return s.encode() if s is not None else None

    if libc().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _address_space() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmSize:")) * 1024


def _tasks_of(uid: int) -> int:
    """Threads the user already runs (RLIMIT_NPROC counts them all, not just the sandbox's)."""
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                count += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            pass
    return count

"""The seccomp filter of a job without processes, on its own (no evaluator): a forked process installs it as a
job's fork does, and the supervisor side (seccomp.Recorder) answers it here. Threads work; fork, vfork, a clone
without CLONE_THREAD and posix_spawn are refused and recorded, and no child runs; clone3 fails with ENOSYS
unrecorded (glibc then makes its threads with clone). A job without the flag still starts processes. A
syscall of another ABI (i386 through int 0x80) is refused and recorded in any filtered job. Last, through
the evaluator: a fork after the candidate's last answer (as it exits: os._exit rebound, an atexit handler,
a native exit handler as a static destructor registers, or deaf to the quit and killed), known only from its
job's exit, is hacked too; and with no exit record read there is no verdict of correct."""

from __future__ import annotations

import ctypes
import json
import os
import socket
import tempfile

import pytest

from hipforge.sandbox import seccomp

pytestmark = pytest.mark.skipif(not seccomp.supported(), reason="the filter is x86-64 Linux only")
PR_SET_NO_NEW_PRIVS, SIGCHLD = 38, 17


def _probe(no_processes: bool, marker: str, i386: bool = False) -> dict:
    """In a filtered child: try each way of making a thread or a process. Returns what it saw and the
    recorder's records."""
    ours, theirs = socket.socketpair()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the filtered child: report through the pipe, never return into pytest
        code = 1
        try:
            ours.close()
            os.close(read_fd)
            ctypes.CDLL(None).prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            offered = seccomp.offer(theirs, no_processes=no_processes)
            seen = _tries(marker, no_processes, i386) if offered else {"unsupported": True}
            os.write(write_fd, json.dumps(seen).encode())
            code = 0
        finally:
            os._exit(code)
    theirs.close()
    os.close(write_fd)
    spawned: list[str] = []
    recorder = seccomp.Recorder.receive(ours, [tempfile.gettempdir()], spawned.append)
    with os.fdopen(read_fd, "rb") as f:
        seen = json.loads(f.read() or b"{}")
    os.waitpid(pid, 0)
    if recorder is not None:
        recorder.finish()
    ours.close()
    if seen.get("unsupported") or recorder is None:
        pytest.skip("no seccomp user notifications here")
    return {**seen, "spawns": recorder.spawns, "writes": recorder.writes, "told": spawned}


def _tries(marker: str, no_processes: bool, i386: bool) -> dict:
    import threading

    # PyDLL: the GIL stays held through each call. A raw fork syscall skips Python's after-fork handling, so
    # under ctypes.CDLL (GIL released for the call) a child forked while another thread of the pytest worker
    # held the GIL waited for it forever
    libc = ctypes.PyDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    seen: dict = {}
    done: list[int] = []
    threads = [threading.Thread(target=done.append, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seen["threads"] = sorted(done)

    def child_ran(r: int) -> None:
        if r == 0:  # the child (only if the filter let it be made): no text I/O, whose codec lookup may import
            os.write(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_APPEND), b"ran\n")
            os._exit(0)
        if r > 0:
            os.waitpid(r, 0)

    tries = {"fork": lambda: libc.syscall(57), "vfork": lambda: libc.syscall(58),
             "clone": lambda: libc.syscall(56, SIGCHLD, 0, 0, 0, 0), "libc_fork": libc.fork}
    if not no_processes:
        del tries["vfork"]  # a vfork child that got made would run Python on our stack
    for name, call in tries.items():
        r = call()
        seen[name] = [r, ctypes.get_errno()]
        child_ran(r)
    clone3_args = (ctypes.c_uint64 * 11)(0, 0, 0, 0, SIGCHLD)  # flags 0, exit_signal SIGCHLD
    r = libc.syscall(435, clone3_args, ctypes.c_size_t(ctypes.sizeof(clone3_args)))
    seen["clone3"] = [r, ctypes.get_errno()]
    child_ran(r)
    seen["int80"] = _i386_getpid() if i386 else None
    try:
        spawned = os.posix_spawn("/bin/true", ["true"], {})
        os.waitpid(spawned, 0)
        seen["posix_spawn"] = "spawned"
    except OSError as e:
        seen["posix_spawn"] = e.errno
    return seen


def _i386_getpid() -> int:
    """getpid through int 0x80: i386's syscall numbers (its fork is 2, its open 5), which a filter that checks
    only x86-64's numbers would let through."""
    libc = ctypes.CDLL(None)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    page = libc.mmap(None, 4096, 7, 0x22, -1, 0)  # read, write, exec; private, anonymous
    code = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])  # mov eax, 20 (i386 getpid); int 0x80; ret
    ctypes.memmove(page, code, len(code))
    return ctypes.CFUNCTYPE(ctypes.c_int)(page)()


def _i386_works() -> bool:
    """Whether this kernel runs i386 syscalls (IA32 emulation): tried in a throwaway child."""
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(0 if _i386_getpid() == os.getpid() else 1)
        finally:
            os._exit(1)
    return os.waitpid(pid, 0)[1] == 0


def test_a_job_without_processes_keeps_its_threads_and_starts_no_process(tmp_path) -> None:
    marker = str(tmp_path / "child-ran")
    seen = _probe(True, marker)
    assert seen["threads"] == [0, 1, 2, 3]
    for name in ("fork", "vfork", "clone", "libc_fork"):
        assert seen[name] == [-1, 1], (name, seen)  # EPERM
    assert seen["clone3"] == [-1, 38], seen  # ENOSYS, unrecorded
    assert seen["posix_spawn"] != "spawned", seen
    assert not os.path.exists(marker), "a child ran"
    assert seen["spawns"][:3] == ["fork()", "vfork()", f"clone(flags={SIGCHLD:#x})"], seen
    assert len(seen["spawns"]) >= 5  # glibc's fork and posix_spawn are clones too
    assert all(s.startswith(("fork", "vfork", "clone(")) for s in seen["spawns"])
    assert seen["told"] == ["fork()"] and seen["writes"] == []  # told once, at the first


def test_a_syscall_of_another_abi_is_refused_and_recorded(tmp_path) -> None:
    if not _i386_works():
        pytest.skip("no IA32 emulation in this kernel: int 0x80 is no way around the filter here")
    seen = _probe(False, str(tmp_path / "child-ran"), i386=True)
    assert seen["int80"] == -13, seen  # EACCES
    assert seen["writes"] == [f"syscall 20 of another ABI (arch {0x40000003:#x})"], seen
    seen = _probe(True, str(tmp_path / "child-ran"), i386=True)
    assert seen["int80"] == -13 and "another ABI" in seen["writes"][0], seen


def test_a_job_with_processes_still_starts_them(tmp_path) -> None:
    marker = str(tmp_path / "child-ran")
    seen = _probe(False, marker)
    assert seen["threads"] == [0, 1, 2, 3]
    assert all(seen[name][0] > 0 for name in ("fork", "clone", "libc_fork", "clone3")), seen
    assert seen["posix_spawn"] == "spawned" and seen["spawns"] == [] and seen["told"] == []
    with open(marker) as f:
        assert f.read().count("ran") == 4


FORK = "ctypes.CDLL(None).syscall(57)"  # fork(2); refused, so no child returns into the candidate's code
AT_EXIT = {
    "os_exit": f"_exit = os._exit\n\n\ndef _fork_then_exit(code):\n    {FORK}\n    _exit(code)\n\n\n"
               "os._exit = _fork_then_exit\n",
    # an atexit handler, run as the interpreter's own exit would run it
    "atexit": f"import atexit\n_exit = os._exit\natexit.register(lambda: {FORK})\n\n\n"
              "def _exit_with_handlers(code):\n    atexit._run_exitfuncs()\n    _exit(code)\n\n\n"
              "os._exit = _exit_with_handlers\n",
    # native: registered as a C++ static destructor registers itself (__cxa_atexit), libc's exit() runs it
    "static_destructor": "libc = ctypes.CDLL(None)\n"
                         "libc.__cxa_atexit(ctypes.cast(libc.fork, ctypes.c_void_p), None, None)\n"
                         "os._exit = libc.exit\n",
    # deaf to the quit: its job is killed, and its server still reports the exit
    "then_hangs": f"def _fork_then_hang(code):\n    {FORK}\n    time.sleep(3600)\n\n\n"
                  "os._exit = _fork_then_hang\n",
}


@pytest.mark.parametrize("how", AT_EXIT)
def test_a_candidate_that_forks_after_its_last_answer_is_hacked(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job's process ends through os._exit (sandbox/server.py), so atexit handlers, static destructors and
    interpreter teardown never run there; a candidate that rebinds os._exit forks as its process exits,
    correct on every trial and after every answer the parent reads. The supervisor refuses the fork and
    records it in the job's exit (spawns): the verdict is hacked / process_spawn as for a fork during the
    trials."""
    from hipforge.execution import evaluation_jobs
    from hipforge.execution.verdict import Verdict
    from tests.test_trust_boundary import _no_processes_here, around

    _no_processes_here()
    monkeypatch.setattr(evaluation_jobs, "EXIT_WAIT_S", 3.0)  # the hanging one's wait for its exit
    result = around("relu", "return honest(self, x)", prelude=AT_EXIT[how])
    assert result.verdict == Verdict.HACKED and result.hack_check == "process_spawn", result.message
    assert "recorded at its exit" in result.message and "correct" in result.message, result.message


def test_no_exit_record_leaves_no_correct_verdict_and_a_recorded_one_overrules_any() -> None:
    from hipforge.execution.evaluation import read_exit
    from hipforge.execution.verdict import EvalResult, Verdict

    for lost in ({}, {"event": "exit", "lost": True}):  # wedged (killed with its server), or the server died
        result = EvalResult(Verdict.CORRECT, "correct on all trials")
        read_exit(result, lost, [])
        assert result.verdict == Verdict.RUNTIME_ERROR and "no exit record" in result.message
    result = EvalResult(Verdict.TIMEOUT, "too slow")
    read_exit(result, {}, [])
    assert result.verdict == Verdict.TIMEOUT  # a failure stays the failure it was
    result = EvalResult(Verdict.CORRECT, "correct on all trials")
    read_exit(result, None, [])  # no candidate's job: nothing to read
    assert result.verdict == Verdict.CORRECT
    result = EvalResult(Verdict.INCORRECT, "wrong")
    read_exit(result, {"recorded": True, "spawns": ["clone(flags=0x1200011)"], "writes": []}, [])
    assert result.verdict == Verdict.HACKED and result.hack_check == "process_spawn"
    assert "clone(flags=0x1200011)" in result.message and "before that: incorrect: wrong" in result.message

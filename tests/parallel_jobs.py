"""Module-level jobs the workers (processes, subinterpreters and threads) import in the pool tests."""

import logging
import os
import signal
import sys
import time

from robotlab import Tool, ToolError, param

IMPORTED_BY = os.getpid()  # which process imported this module: a forkserver that preloaded it, or the worker


def imported_by():
    """(the pid of the process that imported this module, this worker's parent pid, this worker's pid)."""
    return IMPORTED_BY, os.getppid(), os.getpid()


def add(a, b):
    return a + b


def echo(value):
    return value


def burn(n=200_000):
    total = 0
    for i in range(n):
        total += i * i
    return total


def sleep(seconds):
    time.sleep(seconds)
    return seconds


def kill_self():
    os.kill(os.getpid(), signal.SIGKILL)


def add_or_die(a, b, die=False):
    if die:
        kill_self()
    return a + b


def exit_now(code=3):
    os._exit(code)


def segfault():
    import ctypes

    ctypes.string_at(0)


def raise_value_error(message):
    raise ValueError(message)


def log_warning(message):
    logging.getLogger("tests.worker").warning(message)
    return "logged"


def worker_state():
    return {"pid": os.getpid(), "worker": worker_id(), "litellm": "litellm" in sys.modules, "path": list(sys.path),
            "cost_map": os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP")}


class Multiply(Tool):
    description = "Multiply"
    param("a", type="integer")
    param("b", type="integer")

    def execute(self, *, a, b):
        if a < 0:
            raise ToolError("negative input", retryable=True)
        return a * b


def pid():
    return os.getpid()


_flag = None


def set_flag(value):
    global _flag
    _flag = value


def read_flag():
    return _flag


def fail_init(delay=0.0):
    time.sleep(delay)
    raise RuntimeError("initializer refused")


class NeedsTwoArgs(Exception):
    """Unpickling calls NeedsTwoArgs(*args) with one arg: it cannot be rebuilt in the parent."""

    def __init__(self, a, b):
        super().__init__(f"{a}/{b}")


def raise_unrebuildable():
    raise NeedsTwoArgs("x", "y")


def return_lock():
    import threading

    return threading.Lock()


def sleep_with_pidfile(path, seconds):
    """Write this worker's pid to *path*, then sleep: the test knows whom to kill."""
    with open(path, "w") as f:
        f.write(str(os.getpid()))
    time.sleep(seconds)
    return "slept"


def worker_id():
    """What the pool lists in ``worker_ids`` for the worker running this job: its pid, its interpreter's id,
    or its thread worker's id."""
    import threading

    from robotlab.parallel.thread_backend import THREAD_NAME

    name, prefix = threading.current_thread().name, THREAD_NAME.format("")
    if name.startswith(prefix):
        return int(name[len(prefix):])
    try:
        import _interpreters
    except ImportError:  # before 3.13: no subinterpreters, so a process worker
        return os.getpid()
    current, main = _interpreters.get_current()[0], _interpreters.get_main()[0]
    return os.getpid() if current == main else current


def wait_for_file(path, limit):
    """Return once *path* exists (or after *limit* seconds): a job the test ends when it chooses."""
    deadline = time.monotonic() + limit
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)
    return os.path.exists(path)


def log_from_worker(message):
    logging.getLogger("tests.worker").warning("%s from %s", message, worker_id())
    return worker_id()


def start_sleeper(pidfile=None, then=0.0):
    """Start ``sleep 300`` and leave it running; write its pid to *pidfile* (if given), sleep *then*
    seconds, return the pid: a job that leaves a subprocess behind (or is stopped while it runs)."""
    import subprocess

    child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    if pidfile is not None:
        with open(f"{pidfile}.part", "w") as f:
            f.write(str(child.pid))
        os.replace(f"{pidfile}.part", pidfile)  # whole, or not there yet
    time.sleep(then)
    return child.pid

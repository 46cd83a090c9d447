"""Large payloads cross to worker processes through shared memory, not the pipe.

Prints how long a 64 MiB round trip takes through robotlab's pool and through
ProcessPoolExecutor (which pickles it through a pipe), and that the worker's
view of an argument is read-only. Offline, a few seconds.
"""

import time
from concurrent.futures import ProcessPoolExecutor

from robotlab.parallel import WorkerPool


def echo(data):
    return data


def try_to_change(view):
    try:
        view[0] = 0
    except TypeError as exc:
        return f"refused: {exc}"
    return "changed"


def timed(pool, data):
    pool.submit(echo, b"warm").result()
    started = time.perf_counter()
    assert pool.submit(echo, data).result() == data
    return time.perf_counter() - started


if __name__ == "__main__":
    data = bytes(range(256)) * (64 << 12)  # 64 MiB
    with WorkerPool(size=1) as pool, ProcessPoolExecutor(1) as ppe:
        print(f"64 MiB echo: robotlab {timed(pool, data) * 1e3:.0f} ms, "
              f"ProcessPoolExecutor {timed(ppe, data) * 1e3:.0f} ms")
        print("a worker writing into its argument:", pool.submit(try_to_change, memoryview(bytearray(data))).result())

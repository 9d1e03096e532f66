"""A program for `snapstate record` tests: ends the way argv[1] says."""

import os
import signal
import sys
import time


def work(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def main(how):
    data = {"how": how, "values": [1, 2, 3]}
    result = work(10)
    print("result", result, flush=True)
    if how == "exit":
        sys.exit(3)
    if how == "raise":
        secret_key = "hunter2"
        raise ValueError(f"bad {data['how']}")
    if how in ("sigint", "sigterm", "sigkill"):
        print("waiting", flush=True)
        while True:
            result = work(50)
            time.sleep(0.01)
    if how == "os_exit":
        sys.stdout.flush()
        os._exit(7)
    line = sys.stdin.readline().strip() if how == "stdin" else ""
    print("argv", sys.argv[1:], "name", __name__, "line", line)
    return result


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "normal")

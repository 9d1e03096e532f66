"""Durable programs for the lease, sleep and retry tests (issue 17).

``python durable_timed.py MODE FILE SIDE``, MODE one of:

- ``slow``: wait for an answer, then an effect, then block until the file ``SIDE.go`` exists,
  then a last effect (a resumer can be killed mid-continuation);
- ``sleep``: an effect, ``sleep_until`` three seconds later, an effect;
- ``retry``: an effect that hits a rate limit on its first call (``retry_after`` 2 s), retried;
- ``crash``: an effect, then SIGKILL to itself the first time (``SIDE.crashed`` marks it), then
  an effect and a block until ``SIDE.go`` exists, then a last effect (a crashed run's live
  continuation that can be held).
"""

import os
import signal
import sys
import time

import snapstate_capture as snap

mode, path, side = sys.argv[1], sys.argv[2], sys.argv[3]


def note(text):
    with open(side, "a", encoding="utf-8") as handle:
        handle.write(text + "\n")


@snap.effect(name="work")
def work(what):
    note(what)
    return f"{what} done"


class RateLimitError(Exception):
    def __init__(self, retry_after):
        super().__init__(retry_after)  # args: what unpickling passes back to __init__
        self.retry_after = retry_after

    def __str__(self):
        return f"rate limited, retry after {self.retry_after} s"


@snap.effect(name="fetch", retry=snap.Retry(on=(RateLimitError,), backoff=0.5, max_attempts=3))
def fetch(url):
    lines = open(side, encoding="utf-8").read().splitlines() if os.path.exists(side) else []
    calls = sum(1 for line in lines if line.startswith("fetch"))
    note(f"fetch {url} attempt {calls + 1}")
    if calls == 0:
        raise RateLimitError(2)
    return f"page {url}"


def main():
    with snap.record(path, name=mode):
        if mode == "slow":
            answer = snap.wait_for("go-ahead", prompt="Start?")
            first = work(f"after {answer}")
            snap.checkpoint("blocked", first=first)
            while not os.path.exists(side + ".go"):
                time.sleep(0.05)
            print("final:", first, work("finish"))
        elif mode == "sleep":
            first = work("before")
            woke = snap.sleep_until(time.time() + 3, reason="let the cache cool")
            print("final:", first, work("after"), woke > 0)
        elif mode == "retry":
            print("final:", fetch("https://example.invalid/a"))
        elif mode == "crash":
            first = work("one")
            snap.checkpoint("one", first=first)
            if not os.path.exists(side + ".crashed"):
                open(side + ".crashed", "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
            second = work("two")
            snap.checkpoint("blocked", second=second)
            while not os.path.exists(side + ".go"):
                time.sleep(0.05)
            print("final:", second, work("three"))


main()

"""Signals arriving while the program makes garbage (young collections all the time, so the
tracer's gc callback runs often): ``python signal_churn.py MODE TRIALS`` sends itself one signal
per trial from a timer thread and counts the trials where it arrived as the exception the
program expects. MODE ``int``: SIGINT, Python's default handler, ``KeyboardInterrupt``;
``term``: SIGTERM, a handler of the program's that raises ``SystemExit``. Prints
``caught N lost M``."""

import os
import signal
import sys
import threading
import time

mode, trials = sys.argv[1], int(sys.argv[2])
number, expected = (signal.SIGINT, KeyboardInterrupt) if mode == "int" else \
    (signal.SIGTERM, SystemExit)
if mode == "term":
    def on_term(signum, frame):
        raise SystemExit(3)

    signal.signal(signal.SIGTERM, on_term)


def garbage(n):
    return [[i] for i in range(n)]


caught = lost = 0
for trial in range(trials):
    timer = threading.Timer(0.005, os.kill, (os.getpid(), number))
    try:
        timer.start()  # (in the try: a slow start may see the signal arrive)
        deadline = time.monotonic() + 0.5
        kept = []
        while time.monotonic() < deadline:
            kept.append(garbage(50))
            if len(kept) > 2000:
                kept = []
        lost += 1
    except expected:
        caught += 1
    timer.join()
print(f"caught {caught} lost {lost}")

"""A call-traced loop that appends to a list of 150 rows and calls a function per row:
``python growing_rows.py OUT.snap``. With ``ROWS_WHOLE=1`` it records as SnapState did before
big locals were stored by chunks (``CaptureOptions(chunked_locals=False)``), the way a run
recorded by an older version reads."""

import os
import sys

import snapstate_capture as snap


def note(row):
    return row["id"] * 2


def work(n):
    rows = []
    total = 0
    for i in range(n):
        rows.append({"id": i, "text": f"row number {i}"})
        total += note(rows[-1])
    return total


if __name__ == "__main__":
    # no module-level local for it: a replay runs without ROWS_WHOLE and must not differ here
    with snap.record(sys.argv[1], trace="calls", include=["*growing_rows.py"],
                     options=snap.CaptureOptions(
                         chunked_locals=os.environ.get("ROWS_WHOLE") != "1")):
        print(work(150))

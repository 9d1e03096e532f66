"""A reader child for the shared-store tests: reads ``LOCATION`` over and over while recorders
write to it, until ``RUNS`` runs are there and finished (or ``SECONDS`` passed); checks that a
run's step count never goes down and that every step it sees reads whole. Prints ``reads N``."""

import sys
import time

import snapstate_capture as snap

location, runs, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
seen: dict[str, int] = {}
reads = 0
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    try:
        timeline = snap.open_timeline(location)
    except snap.TimelineError:
        time.sleep(0.05)  # the store is created by the first recorder's writer
        continue
    with timeline:
        for run in timeline.runs:
            count = len(run.steps)
            assert count >= seen.get(run.id, 0), (run.id, count, seen[run.id])
            seen[run.id] = count
            if count:
                last = run.steps[count - 1]
                assert last.extra["turn"].preview["repr"] == str(count - 1), last.extra
            reads += 1
        done = [r for r in timeline.runs if r.status == "finished"]
    if len(done) >= runs:
        break
    time.sleep(0.02)
print("reads", reads, flush=True)

"""A traced call made while the program holds a lock that its object's own pickling takes:
capture shows the object bounded instead of pickling it, so the program does not wait for its
own lock (helper-37: ``pytest --snapstate`` hung on a class whose ``__getstate__`` drops its
lock, 3 of 3), and captures it in full again once the lock is free."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import snapstate_capture as snap
from snapstate_capture.values.taken_locks import holds_taken_lock
from tests.conftest import ROOT

STORE = """\
import sys, threading
import snapstate_capture as snap


class Store:
    def __init__(self):
        self._lock = threading.Lock()
        self.items = []

    def __getstate__(self):
        with self._lock:  # snapshot under the lock, then leave the lock out
            state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def add(self, x):
        with self._lock:
            self._append(x)

    def _append(self, x):
        self.items.append(x)


def main():
    store = Store()
    store.add(1)
    store.add(2)
    return store


with snap.record(sys.argv[1], trace=sys.argv[2]):
    main()
print("done")
"""


def test_a_call_made_under_the_objects_own_lock_does_not_wait_for_it(tmp_path):
    (tmp_path / "store.py").write_text(STORE)
    for mode in ("calls", "lines"):
        path = tmp_path / f"{mode}.snap"
        done = subprocess.run([sys.executable, "store.py", str(path), mode], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60,
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                   "XDG_CONFIG_HOME": str(tmp_path / "cfg")})
        assert done.returncode == 0 and done.stdout == "done\n", done.stderr
        with snap.open_timeline(path) as timeline:
            steps = list(timeline.runs[-1].steps)
            under_lock = [s for s in steps if s.function == "Store._append"]
            assert under_lock, [s.function for s in steps]
            shown = under_lock[0].frames[-1].locals["self"]
            assert shown.preview.get("bounded", "").startswith("holds a lock taken")
            returned = [s for s in steps if s.function == "main" and s.kind == "return"][-1]
            store = returned.frames[-1].locals["store"]
            assert "bounded" not in store.preview  # free again: captured in full
            assert "[1, 2]" in json.dumps(store.preview), store.preview


def test_only_objects_that_pickle_with_their_own_code_and_hold_a_taken_lock():
    class Plain:
        def __init__(self):
            self.lock = threading.Lock()

    class Own(Plain):
        def __getstate__(self):
            return {}

    class OwnR(Own):
        def __init__(self):
            self.lock = threading.RLock()

    plain, own, own_r = Plain(), Own(), OwnR()
    assert not holds_taken_lock(own) and not holds_taken_lock(own_r)
    with plain.lock, own.lock, own_r.lock:
        assert not holds_taken_lock(plain)  # pickle refuses its lock: it never waits
        assert holds_taken_lock(own) and holds_taken_lock(own_r)
    assert not holds_taken_lock(own)

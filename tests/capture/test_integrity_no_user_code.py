"""Capture never runs the program's reconstructors: a payload's loadability is judged from its
opcodes (``values/loadability.py``), and no marker is written while recording (issue 22, 11)."""

from __future__ import annotations

import pathlib
import pickle

import snapstate_capture as snap
from snapstate_capture.values.loadability import judge
from tests.conftest import run_cli, run_python


def test_no_reconstructor_runs_while_recording(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    script = tmp_path / "agent.py"
    script.write_text(
        "import pathlib, sys\n"
        "import snapstate_capture as snap\n"
        "MARKERS = pathlib.Path(sys.argv[2])\n"
        "def rebuild(n):\n"
        "    (MARKERS / f'rebuild-{n}').touch()\n"
        "    return n\n"
        "class Reduces:\n"
        "    def __init__(self, n): self.n = n\n"
        "    def __reduce__(self): return (rebuild, (self.n,))\n"
        "class SetsState:\n"
        "    def __init__(self, n): self.n = n\n"
        "    def __setstate__(self, state):\n"
        "        (MARKERS / f'setstate-{state[\"n\"]}').touch()\n"
        "        self.__dict__.update(state)\n"
        "class Touches:\n"
        "    def __init__(self, n): self.path = MARKERS / f'touch-{n}'\n"
        "    def __reduce__(self): return (pathlib.Path.touch, (self.path,))\n"
        "with snap.record(sys.argv[1]):\n"
        "    for i in range(4):\n"
        "        a, b, c = Reduces(i), SetsState(i), Touches(i)\n"
        "        nested = {'items': [Reduces(10 + i), SetsState(10 + i)]}\n"
        "        snap.checkpoint('turn', extra=SetsState(20 + i))\n")
    path = tmp_path / "agent.snap"
    done = run_python(str(script), str(path), str(markers))
    assert done.returncode == 0, done.stderr
    assert sorted(markers.iterdir()) == []  # nothing of the program ran while recording
    shown = run_cli("show", str(path), "--step", "3")
    assert shown.returncode == 0 and "not loadable" not in shown.stdout
    assert sorted(markers.iterdir()) == []  # nor while showing
    loaded = run_python("-c", (
        "import sys\n"
        "import snapstate_capture as snap\n"
        "with snap.open_timeline(sys.argv[1], trust=True) as t:\n"
        "    step = t.runs[-1].steps[3]\n"
        "    for v in step.frames[-1].locals.values():\n"
        "        try: v.load()\n"
        "        except Exception: pass\n"), str(path), str(markers), cwd=tmp_path)
    assert loaded.returncode == 0, loaded.stderr
    # with trust the same payloads do run their reconstructors (those this process can find)
    assert sorted(m.name for m in markers.iterdir()) == ["touch-3"]


def test_judging_reads_names_without_running_them(tmp_path):
    marker = tmp_path / "ran"

    class Touch:
        def __reduce__(self):
            return (pathlib.Path.touch, (marker,))

    assert judge(pickle.dumps(Touch(), 5)) == (True, None)
    assert not marker.exists()
    stale = pickle.dumps(Touch(), 5).replace(b"touch", b"tauch")
    verdict, why = judge(stale)
    assert verdict is False and "pathlib.Path.tauch cannot be found" in why
    assert judge(b"not a pickle") == (None, None)
    assert not marker.exists()


def test_a_record_of_values_with_reconstructors_still_loads_with_trust(snap_path):
    with snap.record(snap_path):
        value = {"when": __import__("datetime").date(2024, 1, 2), "items": {1, 2}}
        snap.checkpoint()
    with snap.open_timeline(snap_path, trust=True) as timeline:
        got = timeline.runs[-1].steps[0].frames[-1].locals["value"]
        assert "not_loadable" not in got.preview and got.load() == value


class Kept:
    pass


def test_a_global_found_once_is_found_again_and_a_missing_one_stays_missing():
    import types
    import sys

    module = types.ModuleType("snapstate_judge_probe")
    module.Kept = Kept
    Kept.__module__, Kept.__qualname__ = module.__name__, "Kept"
    sys.modules[module.__name__] = module
    try:
        data = pickle.dumps(Kept())
        assert judge(data) == (True, None)
        assert judge(data) == (True, None)  # from the cache of names found
        missing = data.replace(b"Kept", b"Gone")
        assert judge(missing)[0] is False and judge(missing)[0] is False
        sys.modules[module.__name__] = types.ModuleType(module.__name__)  # another module
        assert judge(data)[0] is False  # the cache holds the module a name was found in
    finally:
        sys.modules.pop(module.__name__, None)
        Kept.__module__, Kept.__qualname__ = __name__, "Kept"

"""The capture side stays light: importing it and recording a run loads no UI library."""

from __future__ import annotations

import json

from tests.conftest import run_python

CHECK = """
import json, sys
import snapstate_capture as snap
with snap.record(sys.argv[1]):
    data = {"a": [1, 2]}
    snap.checkpoint("one", data=data)
timeline = snap.open_timeline(sys.argv[1])
timeline.runs[-1].steps[-1].frames[-1].locals["data"].preview
print(json.dumps(sorted(m for m in sys.modules
                        if m.split(".")[0] in ("textual", "rich", "deepdiff", "pygments"))))
"""


def test_capture_imports_no_ui_library(tmp_path):
    result = run_python("-c", CHECK, str(tmp_path / "h.snap"))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


WRITER = """
import json, sys
import snapstate_capture.tracing.trace_writer
print(json.dumps(sorted(m for m in sys.modules if m.startswith("snapstate_capture."))))
"""


def test_trace_writer_process_loads_only_what_it_needs():
    """Every traced recording waits for this process to start and to end: it must not load the
    capture side (api, tracer, effects, frames), only storage and value previews."""
    result = run_python("-c", WRITER)
    assert result.returncode == 0, result.stderr
    loaded = set(json.loads(result.stdout))
    assert "snapstate_capture.store.writer" in loaded
    assert not loaded & {"snapstate_capture.capture.api", "snapstate_capture.capture.recorder",
                         "snapstate_capture.tracing.tracer", "snapstate_capture.capture.effects",
                         "snapstate_capture.capture.frames"}


def test_public_names_load_on_first_use():
    result = run_python("-c", "import snapstate_capture as s, sys;"
                        "print('snapstate_capture.capture.api' in sys.modules);"
                        "print(s.record.__module__, s.SnapStateError.__name__);"
                        "from snapstate_capture import open_timeline, effects;"
                        "print(open_timeline.__module__, effects.__name__)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "snapstate_capture.capture.api", "SnapStateError",
                                     "snapstate_capture.trust.gate",
                                     "snapstate_capture.capture.effects"]


ENTRY_POINT = """
import json, sys
import snapstate_capture.integrations.pytest_plugin
print(json.dumps(sorted(m for m in sys.modules if m.startswith("snapstate_capture"))))
"""


def test_the_pytest_entry_point_loads_almost_nothing():
    """pytest imports the plugin in every session of every project that installed SnapState,
    ``--snapstate`` or not: the integrations' record hooks register without the capture API,
    the recorder, the value layer or the store."""
    result = run_python("-c", ENTRY_POINT)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        "snapstate_capture", "snapstate_capture.capture", "snapstate_capture.capture.hooks",
        "snapstate_capture.capture.imports", "snapstate_capture.integrations",
        "snapstate_capture.integrations.pytest_plugin"]

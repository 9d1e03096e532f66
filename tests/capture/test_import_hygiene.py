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

"""Values in real processes: ``__main__`` identity on load, ``snapstate show`` of placeholders
and previews, no heavy import by capture, and no silent ``except: pass`` in the capture code."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import PROGRAMS, ROOT, run_cli, run_python


def record_main(tmp_path: Path) -> tuple[Path, dict]:
    path = tmp_path / "main.snap"
    done = run_python(str(PROGRAMS / "values_main.py"), str(path))
    assert done.returncode == 0, done.stderr
    return path, json.loads(done.stdout)


def test_enum_and_classes_of_main_keep_identity_on_load(tmp_path):
    _, checks = record_main(tmp_path)
    assert checks == {
        "color_identity": True,
        "agent_serializer": "pickle",  # the lambda part: by its code (issue 15)
        "agent_color_identity": True,
        "agent_class_identity": True,
        "module_identity": True,
        "lambda_result": True,
        "lock_placeholder": "Placeholder",
        "gen_next": 0,
    }


def test_show_displays_previews_placeholders_and_capture_errors(tmp_path):
    path, _ = record_main(tmp_path)
    shown = run_cli("show", str(path), "--step", "0")
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "__main__.Agent" in text
    assert "[placeholder at agent.lock: a lock is live state: not serialized]" in text
    assert "[placeholder: a running generator cannot be saved]" in text
    assert "(dill)" not in text  # the lambda part is written by pickle now (issue 15)
    assert "capture errors (2)" in text
    as_json = run_cli("show", str(path), "--step", "0", "--json")
    frame = json.loads(as_json.stdout)["step"]["frames"][-1]["locals"]
    assert frame["agent"]["preview"]["placeholders"][0]["path"] == "agent.lock"
    assert frame["gen"]["placeholder"]["reason"] == "a running generator cannot be saved"


def test_show_displays_redaction_without_loading_values(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(
        "import sys\n"
        "import snapstate_capture as snap\n"
        "class Fussy:\n"
        "    def __setstate__(self, state):\n"
        "        raise RuntimeError('no')\n"
        "with snap.record(sys.argv[1]):\n"
        "    config = {'model': 'm', 'api_key': 'k' * 12}\n"
        "    fussy = Fussy()\n"
        "    fussy.x = 1\n"
        "    snap.checkpoint()\n")
    path = tmp_path / "r.snap"
    assert run_python(str(script), str(path)).returncode == 0
    shown = run_cli("show", str(path))
    text = " ".join(shown.stdout.split())
    assert "'api_key': <redacted>" in text
    assert "[redacted: config['api_key']]" in text
    assert "not loadable" not in text  # judged without running Fussy.__setstate__
    assert "k" * 12 not in shown.stdout


HEAVY = """
import json, sys
import snapstate_capture as snap
class Thing:
    def __init__(self):
        self.items = [1, 2, {"a": (3, 4)}]
with snap.record(sys.argv[1]):
    thing = Thing()
    text = "hello"
    snap.checkpoint("one", data=[thing, text])
print(json.dumps(sorted(m for m in sys.modules
                        if m.split(".")[0] in ("numpy", "pandas", "pydantic", "dill"))))
"""


def test_capture_imports_no_heavy_library_for_plain_values(tmp_path):
    result = run_python("-c", HEAVY, str(tmp_path / "h.snap"))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_capture_code_has_no_bare_except_pass():
    bare = re.compile(r"except\s*:")
    silent = re.compile(r"except[^:\n]*:\s*(#.*)?\n\s*pass\b")
    sources = {p: p.read_text() for p in (ROOT / "snapstate_capture").rglob("*.py")}
    assert [str(p) for p, text in sources.items() if bare.search(text)] == []
    values = [str(p) for p, text in sources.items()
              if "values" in p.parts and silent.search(text)]
    assert values == []

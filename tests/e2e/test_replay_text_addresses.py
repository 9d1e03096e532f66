"""Strings a program builds from an address — pyparsing names a ``Regex`` with a parse action
``Re:(<function <lambda> at 0x7f…>)`` — hold another number in every process: replay compares
them with the addresses blanked (``addresses.text_without_addresses``), wherever a string is
compared (an inline local, a list's, a set's or an object's part, a long string's payload); a
difference anywhere else in the text is still a divergence."""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import run_cli, run_python

#: A checkpoint with one local, ``label``, holding a text with an address in the shape STAGE
#: names; ``in.txt`` is a part of the text too (changed: a real difference, not an address).
CHECKPOINTED = """
import sys

import snapstate_capture as snap


class Element:
    def __init__(self, action, suffix):
        self.action = action
        self.name = f"Re:({action!r}){suffix}"  # pyparsing's Regex names itself so


def main(stage):
    action = lambda t: int(t)  # noqa: E731
    if stage == "inline":
        label = f"Re:({action!r}) " + open("in.txt").read().strip()
    elif stage == "list":
        label = [f"Re:({action!r}) " + open("in.txt").read().strip()]
    elif stage == "long":
        label = (f"Re:({action!r}) " + open("in.txt").read().strip()) * 20
    elif stage == "set":
        label = {f"<Re:({action!r}) " + open("in.txt").read().strip()}
    else:
        label = Element(action, open("in.txt").read().strip())
    snap.checkpoint("named")
    return label


with snap.record("run.snap"):
    main(sys.argv[1])
"""

#: The same pattern traced: a parser element built with a lambda, then used (pyparsing).
TRACED = """
class Element:
    def __init__(self, action):
        self.action = action
        self.name = f"Re:({action!r})" + open("in.txt").read().strip()

    def parse(self, text):
        return self.action(text)


def describe(element):
    label = f"{element.name} named"
    return len(label)


def main():
    element = Element(lambda t: int(t))
    return describe(element), element.parse("7")


print(main())
"""


def _replay(tmp_path, *args):
    done = run_cli("replay", "run.snap", "--trust", *args, cwd=tmp_path)
    return done.stdout + done.stderr


@pytest.mark.parametrize("stage", ["inline", "list", "long", "set", "object"])
def test_a_text_holding_an_address_replays_and_a_changed_text_diverges(tmp_path, stage):
    (tmp_path / "prog.py").write_text(textwrap.dedent(CHECKPOINTED))
    (tmp_path / "in.txt").write_text("five")
    done = run_python("prog.py", stage, cwd=tmp_path, env={"PYTHONHASHSEED": "0"})
    assert done.returncode == 0, done.stderr
    assert "replayed 1 step, no divergence" in _replay(tmp_path)
    (tmp_path / "in.txt").write_text("fivE")
    changed = _replay(tmp_path)
    assert "divergence at step 0: 1 value(s) differ: label" in changed, changed


def test_a_traced_run_naming_an_element_by_its_lambda_replays(tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent(TRACED))
    (tmp_path / "in.txt").write_text("five")
    done = run_cli("record", "--trace", "lines", "--include", "*/prog.py", "-o", "run.snap",
                   "prog.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "no divergence" in _replay(tmp_path)
    (tmp_path / "in.txt").write_text("fivE")
    changed = _replay(tmp_path)
    assert "divergence at step" in changed and "Element.__init__: self" in changed, changed

"""A bare int that is the id of a local — pyparsing's ``ParserElement.__hash__`` returns
``id(self)`` (called by its packrat cache), ``json``'s pure-Python encoder keeps
``markerid = id(dct)`` (``json.dumps(..., indent=2)``) — is another number in every process:
capture stores it as the local it names (``addresses.local_address``), so a traced or
checkpointed replay does not diverge on it, and an id naming another local still does."""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import PROGRAMS, run_cli, run_python

TRACED = """
class Element:
    def __hash__(self):  # pyparsing's ParserElement.__hash__
        return id(self)


def encode(dct, other):
    markerid = id(dct) if open("in.txt").read() == "dct" else id(other)  # json's encoder
    return markerid != 0


def main():
    cache = {Element(): 1}
    return [hash(element) > 0 for element in cache], encode({"a": 1}, ["b"])


print(main())
"""

CHECKPOINTED = """
import snapstate_capture as snap


class Node:
    pass


def main():
    node, other = Node(), Node()
    key = id(node) if open("in.txt").read().strip() == "node" else id(other)
    snap.checkpoint("keyed")
    return key


with snap.record("run.snap"):
    main()
"""


def _replay(tmp_path):
    done = run_cli("replay", "run.snap", "--trust", cwd=tmp_path)
    return done.stdout + done.stderr


@pytest.mark.parametrize("trace", ["calls", "lines"])
def test_an_id_kept_in_a_traced_local_or_returned_replays(tmp_path, trace):
    (tmp_path / "prog.py").write_text(textwrap.dedent(TRACED))
    (tmp_path / "in.txt").write_text("dct")
    done = run_cli("record", "--trace", trace, "--include", "*/prog.py", "-o", "run.snap",
                   "prog.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "no divergence" in _replay(tmp_path)
    (tmp_path / "in.txt").write_text("other")  # the id of another local: a real difference
    changed = _replay(tmp_path)
    assert "divergence at step" in changed and "encode: markerid" in changed, changed


def test_an_id_kept_in_a_checkpointed_local_replays(tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent(CHECKPOINTED))
    (tmp_path / "in.txt").write_text("node")
    done = run_python("prog.py", cwd=tmp_path, env={"PYTHONHASHSEED": "0"})
    assert done.returncode == 0, done.stderr
    assert "replayed 1 step, no divergence" in _replay(tmp_path)
    (tmp_path / "in.txt").write_text("other")
    changed = _replay(tmp_path)
    assert "divergence at step 0: 1 value(s) differ: key" in changed, changed


#: dataclasses' ``_recursive_repr`` (3.11; ``reprlib.recursive_repr`` alike): a set of
#: ``(id(self), thread)`` keys, a memo of ids one tuple down.
RECURSIVE_REPR = """
import _thread


def recursive_repr(user_function):
    repr_running = set()

    def wrapper(self):
        key = id(self), _thread.get_ident()
        if key in repr_running:
            return "..."
        repr_running.add(key)
        try:
            result = user_function(self)
        finally:
            repr_running.discard(key)
        return result
    return wrapper


class Point:
    def __init__(self, x):
        self.x = x

    @recursive_repr
    def __repr__(self):
        return f"Point({self.x!r})"


print(repr(Point(1)))
"""


def test_a_set_of_id_keyed_tuples_in_a_traced_closure_replays(tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent(RECURSIVE_REPR))
    done = run_cli("record", "--trace", "lines", "--include", "*/prog.py", "-o", "run.snap",
                   "prog.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "no divergence" in _replay(tmp_path)


@pytest.mark.parametrize("trace", ["calls", "lines"])
def test_ids_of_strings_beneath_locals_replay(tmp_path, trace):
    """PyYAML's ``flatten_mapping`` (``<<: *defaults``) keeps ``key_id = id(pair[0].value)``
    and a set of them: ids of key strings one attribute beneath a pair it holds, no local's
    own. A traced replay of any YAML with a merge key diverged on both at the function's
    return (programs/merge_key_ids.py reproduces it with the standard library)."""
    (tmp_path / "prog.py").write_text((PROGRAMS / "merge_key_ids.py").read_text())
    done = run_cli("record", "--trace", trace, "--include", "*/prog.py", "-o", "run.snap",
                   "prog.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "no divergence" in _replay(tmp_path)


def test_an_id_held_by_a_bounded_objects_attribute_replays(tmp_path):
    """PyYAML's representer keeps ``alias_key = id(data)`` (``data`` in its ``object_keeper``
    list) and holds more than 300 objects, so traced steps store it one level deep, its int
    attributes by number: a traced replay of ``yaml.dump`` diverged at the second object it
    represented. Such an int is labelled by what it is the id of, the address blanked
    (programs/alias_keys.py reproduces it with the standard library)."""
    (tmp_path / "prog.py").write_text((PROGRAMS / "alias_keys.py").read_text())
    done = run_cli("record", "--trace", "calls", "--include", "*/prog.py", "-o", "run.snap",
                   "prog.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "no divergence" in _replay(tmp_path)


def test_a_deepcopy_memo_in_traced_frames_replays(tmp_path):
    """``copy.deepcopy``'s memo keeps ``memo[id(memo)] = [originals]``: the id of the value
    itself, which its first digest held as a number — so a part named by that digest was
    another in every process, and a traced replay of any ``__deepcopy__`` of the program's
    (lark's ``Tree``) diverged on ``memo`` (programs/deep_copy_tree.py)."""
    (tmp_path / "prog.py").write_text((PROGRAMS / "deep_copy_tree.py").read_text())
    done = run_cli("record", "--trace", "calls", "--include", "*/prog.py", "-o", "run.snap",
                   "prog.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "no divergence" in _replay(tmp_path)


DEEPCOPY = """
import copy


class Field:
    def __init__(self, name):
        self.name = name

    def __deepcopy__(self, memo):
        return Field(self.name + "'")


class Schema:
    declared = {"a": Field("a"), "b": Field("b")}

    def __init__(self):
        self.fields = copy.deepcopy(self.declared)


print(sorted(f.name for f in Schema().fields.values()))
"""


@pytest.mark.parametrize("trace", ["calls", "lines"])
def test_a_memo_keyed_by_the_id_of_a_library_callers_local_replays(tmp_path, trace):
    """A traced ``__deepcopy__`` gets copy's ``memo``, keyed by the id of the dict being
    copied — a class attribute, no local of the program's, but ``copy.deepcopy``'s own ``x``:
    untraced frames' locals were not read under a tracer, and the replay diverged at ``memo``
    (helper-39: 3 of 3; marshmallow's ``Field.__deepcopy__`` likewise)."""
    (tmp_path / "prog.py").write_text(DEEPCOPY)
    done = run_cli("record", "--trace", trace, "--include", "*/prog.py", "-o", "run.snap",
                   "prog.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "no divergence" in _replay(tmp_path)


BUILTIN_IDS = """
import builtins

NAMES = {id(value): name for name, value in vars(builtins).items()}


def name_of(thing):
    return NAMES.get(id(thing), "?")


print(name_of(len), name_of(__loader__), len(NAMES) > 100)
"""


@pytest.mark.parametrize("trace", ["calls", "lines"])
def test_ids_of_the_builtins_replay(tmp_path, trace):
    """glom maps the id of every builtin to its name at import: most are the interpreter's
    static objects, at one address in every process, but ``__loader__`` (importlib's
    ``BuiltinImporter``, made at start-up) lies elsewhere in a replay child (helper-39: 5 of
    5 diverged there). Such an id is named by its builtin's name."""
    (tmp_path / "prog.py").write_text(BUILTIN_IDS)
    done = run_cli("record", "--trace", trace, "--include", "*/prog.py", "-o", "run.snap",
                   "prog.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "no divergence" in _replay(tmp_path)

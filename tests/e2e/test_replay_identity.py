"""Replay and diff judge values by identity (issue 15 point 1): a traced program whose locals are
a 157-name set, a bound method, a property, a staticmethod, plain objects and a set of plain
objects (ordered by address) replays without divergence and two recordings of it diff as
identical; a planted change is found at its first step."""

from __future__ import annotations

import json
import shutil

import snapstate_capture as snap
from tests.conftest import PROGRAMS, record_traced_script, run_cli
from tests.e2e.replay_helpers import replay_json


def _record(tmp_path, name, program):
    out = tmp_path / f"{name}.snap"
    result = run_cli("record", "--trace", "calls", "-o", str(out), str(program), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return out


def test_identity_cases_replay_and_diff_as_the_same(tmp_path):
    program = shutil.copy(PROGRAMS / "identity_cases.py", tmp_path / "cases.py")
    first, second = _record(tmp_path, "a", program), _record(tmp_path, "b", program)
    result, data = replay_json(first)
    assert result.returncode == 0 and not data.get("divergence"), result.stdout
    assert "no divergence" in data["message"], data
    diff = run_cli("diff", str(first), str(second))
    assert diff.returncode == 0, diff.stdout
    assert diff.stdout.rstrip().endswith("identical")


def test_a_planted_change_diverges_at_its_first_step(tmp_path):
    program = tmp_path / "cases.py"
    shutil.copy(PROGRAMS / "identity_cases.py", program)
    recorded = _record(tmp_path, "a", program)
    with snap.open_timeline(recorded) as timeline:
        steps = list(timeline.runs[-1].steps)
    # the planted change: the fourth Binding made holds one more name in its set
    expected = [s.index for s in steps if s.kind == "return" and s.function == "Binding.__init__"][3]
    program.write_text(program.read_text().replace(
        'self.used = {name, name.upper(), name + "_"}',
        'self.used = {name, name.upper(), name + "_"} | ({"x"} if name == "BaseException" else set())'))
    result, data = replay_json(recorded, "--allow-drift")
    assert result.returncode == 1, result.stdout
    divergence = data["divergence"]
    assert divergence["step"] == expected, json.dumps(divergence)[:2000]
    assert "self" in json.dumps(divergence["variables"])


KEPT: list = []


def peek():
    return None


def render(n):
    data = (i * 2 for i in range(n))  # its preview names its address, its identity does not
    KEPT.append(data)  # alive: the next recording's generator gets another address
    total = 0
    for value in data:
        total += value
        peek()
    return total


def test_a_value_whose_preview_names_its_address_is_judged_identical_by_its_identity(
        snap_path):
    """A traced replay decides a step without ``compare_steps`` when its values' digests differ
    but their previews hold the same identity — ``compare_steps``' own rule for such values.
    mistune's render keeps a generator on the stack: every step went the slow way and a
    replay took 4x longer than it does now (28.6 -> 6.8 s for 11,023 steps)."""
    import os
    from types import SimpleNamespace

    from snapstate_capture.replay.traced_compare import TracedComparison

    KEPT.clear()
    _record_twice(snap_path)
    with snap.open_timeline(snap_path, trust=True) as timeline:
        recorded, again = timeline.runs[-2], timeline.runs[-1]
        session = SimpleNamespace(relocation=SimpleNamespace(path=lambda path: path))
        comparison = TracedComparison(session, recorded, os.getcwd(), 10 ** 9)
        pairs = list(zip(recorded.steps, again.steps))
        assert len(pairs) == len(recorded.steps) == len(again.steps) > 40
        differ = [a for a, b in pairs if a.function == "peek"
                  and a.frames[-2].locals["data"].preview_key
                  != b.frames[-2].locals["data"].preview_key]
        assert len(differ) > 20  # the addresses differ: the keys do
        assert all(comparison._identical(a, b) for a, b in pairs)


def _record_twice(path):
    for target in (path, path):  # the same line and locals for both: only the address differs
        with snap.record(target, trace="calls", include=[__file__]):
            render(20)



BARE_ADDRESS = '''\
class Big:
    def __init__(self, n):
        self.items = [object() for _ in range(n)]

    def __repr__(self):
        return f"<Big memory:{id(self):x}>"


def make(n):
    big = Big(n)
    return big


def use(big):
    return len(big.items)


print(use(make(400)))
'''


def test_a_big_value_whose_repr_names_its_address_without_0x_replays(tmp_path):
    """A traced step's value of over 300 objects keeps no payload and is compared by its
    preview; Jinja's ``<Template memory:7ffff45826d0>`` names its address without ``0x``, and
    every replay of a ``from_string`` template diverged at the step that returned one."""
    path = record_traced_script(tmp_path, "big.py", BARE_ADDRESS)
    with snap.open_timeline(path) as timeline:
        steps = timeline.runs[-1].steps
        returned = [step.frames[-1].locals["big"].repr for step in steps
                    if step.kind == "return" and step.function == "make"]
        count = len(steps)
    assert returned == ["<Big memory:…>"]
    replayed = run_cli("replay", str(path), cwd=tmp_path, timeout=120)
    assert f"replayed {count} steps, no divergence" in replayed.stdout, (
        replayed.stdout + replayed.stderr)


SEEN_BENEATH = '''\
class Node:
    def __init__(self, name, first=None):
        self.name = name
        self.children = [first] if first is not None else []

    def first(self):
        return self.children[0] if self.children else None


class Seq:
    def __init__(self, *parts):
        self.parts = list(parts)

    def link(self):
        count = 0
        for prev, cur in zip(self.parts, self.parts[1:]):
            seen = set()
            while cur is not None and id(cur) not in seen:
                seen.add(id(cur))  # ids of what it entered: beneath self, no local any more
                cur = cur.first()
                count += 1
        return count


leaf = Node("leaf")
print(Seq(Node("a"), Node("b", Node("c", Node("d", leaf))), Node("e")).link())
'''


def test_a_set_of_the_ids_of_objects_beneath_a_local_replays(tmp_path):
    """pyparsing's ``And.streamline`` keeps ``seen = {id(cur), ...}`` while ``cur`` walks down
    ``self.exprs[1]``'s first expressions: the ids it entered are of objects beneath ``self``,
    no local any more, and a traced replay diverged on ``seen`` at every grammar."""
    path = record_traced_script(tmp_path, "seen.py", SEEN_BENEATH)
    with snap.open_timeline(path) as timeline:
        count = len(timeline.runs[-1].steps)
    replayed = run_cli("replay", str(path), cwd=tmp_path, timeout=120)
    assert f"replayed {count} steps, no divergence" in replayed.stdout, (
        replayed.stdout + replayed.stderr)


def test_classes_a_metaclass_makes_while_their_module_imports_replay_small(tmp_path):
    """jinja2.nodes' ``NodeType.__new__`` returns each node class before it is bound, while
    its package has no ``nodes`` attribute yet: each return was captured with every base by
    value (107 ms a class). Bases are written by reference now (programs/node_tree.py: 30
    chained classes), and the run replays."""
    shutil.copytree(PROGRAMS / "node_classes", tmp_path / "node_classes")
    shutil.copy(PROGRAMS / "node_tree.py", tmp_path)
    path = tmp_path / "tree.snap"
    done = run_cli("record", "--trace", "calls", "--include", "*/node_classes/*", "-o",
                   str(path), "node_tree.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        count = len(run.steps)
        made = [step.extra["return"] for step in run.steps
                if step.kind == "return" and step.frames[-1].function == "NodeType.__new__"]
        sizes = timeline.blob_sizes([value.payload_key for value in made])
    assert len(made) == 31 and max(sizes.values()) < 3000, sizes  # by value: up to ~40 kB
    replayed = run_cli("replay", str(path), "--trust", cwd=tmp_path, timeout=120)
    assert f"replayed {count} steps, no divergence" in replayed.stdout, (
        replayed.stdout + replayed.stderr)

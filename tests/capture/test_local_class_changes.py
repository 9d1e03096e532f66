"""A class defined at run time (inside a function) is stored by value — dill writes its bases
and namespace — so its change detector holds them too: a class attribute set or changed in
place is a new capture, for the class and for its instances (the detector wrote such a class
by reference until 12-06, and the step after ``Config.retries = 5`` still showed 1), at
checkpoints and traced steps alike."""

from __future__ import annotations

import textwrap

import snapstate_capture as snap
from snapstate_capture.capture.detectors import function_detector
from tests.conftest import run_cli


def _loaded(path, name):
    with snap.open_timeline(path, trust=True) as timeline:
        return [s.frames[-1].locals[name].load() for s in timeline.runs[-1].steps
                if s.kind == "checkpoint" and name in s.frames[-1].locals]


def _settings(path, changes):
    with snap.record(path):
        class Config:
            retries = 1
            tags = ["a"]

            @staticmethod
            def pick(x):
                return x

            @property
            def shown(self):
                return self.retries

        instance = Config()
        snap.checkpoint()
        changes(Config)
        snap.checkpoint()
    return instance


def test_a_class_attribute_set_at_run_time_is_a_change_of_the_class_and_its_instances(tmp_path):
    path = tmp_path / "c.snap"

    def change(cls):
        cls.retries = 5
        cls.tags.append("b")

    _settings(path, change)
    assert [(c.retries, c.tags) for c in _loaded(path, "Config")] == [(1, ["a"]), (5, ["a", "b"])]
    assert [(i.retries, i.tags) for i in _loaded(path, "instance")] == [(1, ["a"]),
                                                                        (5, ["a", "b"])]


def test_an_unchanged_local_class_keeps_its_capture(tmp_path):
    path = tmp_path / "c.snap"
    _settings(path, lambda cls: None)
    with snap.open_timeline(path) as timeline:
        refs = [dict(s.frames[-1].local_refs)["Config"] for s in timeline.runs[-1].steps
                if s.kind == "checkpoint"]
    assert refs[0] == refs[1]


def test_a_class_attribute_holding_an_instance_of_the_class_has_a_detector():
    def make():
        class Node:
            pass
        Node.root = Node()
        return Node

    node = make()
    first = function_detector(node)
    assert first is not None and function_detector(node) == first
    node.root.label = "x"
    assert function_detector(node) != first


def test_a_traced_local_class_changed_in_place_is_a_new_value(tmp_path):
    program = tmp_path / "prog.py"
    program.write_text(textwrap.dedent("""
        def main():
            class Limits:
                seen = []
            for turn in range(3):
                Limits.seen.append(turn)
            return Limits

        main()
    """))
    path = tmp_path / "t.snap"
    result = run_cli("record", "--trace", "lines", "-o", str(path), str(program), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    with snap.open_timeline(path, trust=True) as timeline:
        seen = []
        for step in timeline.runs[-1].steps:
            frame = step.frames[-1]
            if frame.function == "main" and "Limits" in frame.locals:
                value = list(frame.locals["Limits"].load().seen)
                if not seen or seen[-1] != value:
                    seen.append(value)
    assert seen == [[], [0], [0, 1], [0, 1, 2]]

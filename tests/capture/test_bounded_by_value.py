"""What dill writes by value counts as what it costs when a traced step decides which values
to store bounded (``tracing/big_values.py``, runs that say ``entry["bounded"]``): a function made
by ``exec`` with its globals, weighted ``BY_VALUE_WEIGHT``; a class pickle cannot name (a
class decorator's builder holding the class it builds, attrs' ``make_class``). attrs' own
``test_make.py`` under ``pytest --snapstate`` ran over fifteen minutes (4.9 s plain; 146 s
with these rules); a class builder holding 150 generated methods recorded 614 steps in
19.6 s (1.2 s). A run recorded before decides as it did."""

from __future__ import annotations

import textwrap

from snapstate_capture.options import ValueOptions
from snapstate_capture.tracing.big_values import (BY_VALUE_WEIGHT, FIRST_PROBE_LIMIT,
                                                  PROBE_LIMIT, BigValues, by_value_weight, reach)
from snapstate_capture.tracing.by_value import local_class
import snapstate_capture as snap
from tests.conftest import run_cli, run_python


def helper(builder, i):
    return i


class Builder:
    """attrs' ``_ClassBuilder`` in small: methods made with ``exec`` into dicts of their own."""

    def __init__(self, cls):
        self.cls = cls
        self.methods = {}

    def add(self, i):
        globs = {"helper": helper}
        exec(f"def m{i}(self):\n    return helper(self, {i})", globs)
        self.methods[f"m{i}"] = globs[f"m{i}"]


def _builder(methods: int) -> Builder:
    builder = Builder(Builder)
    for i in range(methods):
        builder.add(i)
    return builder


def test_functions_made_by_exec_count_with_their_weight():
    count = reach(_builder(3), FIRST_PROBE_LIMIT)  # weighed BY_VALUE_WEIGHT each, as there
    assert count is not None and count >= 3 * BY_VALUE_WEIGHT
    assert reach(_builder(3), by_value=False) < BY_VALUE_WEIGHT  # the rule of older runs
    values = BigValues(ValueOptions())
    assert by_value_weight(PROBE_LIMIT) == max(1, PROBE_LIMIT // 10)  # ten make a value big
    many = _builder(PROBE_LIMIT // by_value_weight(PROBE_LIMIT) + 1)
    assert values.is_big(many)
    assert not BigValues(ValueOptions(), by_value=False).is_big(many)


def _made_class(methods: int) -> type:
    namespace = {}
    for i in range(methods):
        globs: dict = {}
        exec(f"def m{i}(self):\n    return {i}", globs)
        namespace[f"m{i}"] = globs[f"m{i}"]
    return type("Made", (), namespace)


def test_a_class_pickle_cannot_name_is_weighed_by_its_namespace():
    values = BigValues(ValueOptions())
    small, generated = _made_class(2), _made_class(PROBE_LIMIT // by_value_weight(PROBE_LIMIT) + 1)
    assert local_class(small) and local_class(generated) and not local_class(Builder)
    assert not values.is_big(small) and values.is_big(generated)
    # an instance, or a dict holding the class, is captured whole: the class is a leaf there
    assert not values.is_big(generated()) and not values.is_big({"cls": generated})
    assert not BigValues(ValueOptions(), by_value=False).is_big(generated)


PROGRAM = textwrap.dedent("""
    import sys
    import snapstate_capture as snap

    def helper(builder, i):
        return i

    class Builder:
        def __init__(self, cls):
            self.cls, self.methods = cls, {}

        def add(self, i):
            globs = {"helper": helper}
            exec(f"def m{i}(self):\\n    return helper(self, {i})", globs)
            self.methods[f"m{i}"] = globs[f"m{i}"]
            helper(self, i)

    def build():
        class Made:
            pass
        builder = Builder(Made)
        for i in range(40):
            builder.add(i)
        return len(builder.methods)

    options = snap.CaptureOptions(bound_by_value=sys.argv[2] == "new")
    with snap.record(sys.argv[1], trace="calls", options=options):
        print(build())
""")


def test_runs_recorded_by_either_rule_replay_without_divergence(tmp_path):
    program = tmp_path / "builder.py"
    program.write_text(PROGRAM)
    for rule in ("new", "old"):
        path = tmp_path / f"{rule}.snap"
        done = run_python(str(program), str(path), rule, cwd=tmp_path)
        assert done.returncode == 0 and done.stdout.strip() == "40", done.stderr
        with snap.open_timeline(path) as timeline:
            run = timeline.runs[-1]
            assert ("bounded" in run.entry) == (rule == "new")
            bounded = sum("bounded" in (value.preview or {})
                          for step in run.steps for frame in step.frames
                          for value in frame.locals.values())
        assert (bounded > 0) == (rule == "new"), rule
        replayed = run_cli("replay", str(path), cwd=tmp_path)
        assert "no divergence" in replayed.stdout, (rule, replayed.stdout + replayed.stderr)


def test_builtin_and_static_classes_are_never_local():
    """NoneType, function and method are not found under their names in ``builtins``, but
    pickle writes them itself: taken for classes defined at run time, every bounded value
    naming one went uncached, and pyflakes under --trace calls doubled its time."""
    import types

    for cls in (type(None), types.FunctionType, types.MethodType, int, dict, Builder):
        assert not local_class(cls), cls

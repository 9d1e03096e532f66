"""Value identity (issue 15 point 1, docs/value-identity.md): one canonical, process-independent
digest decides whether two values are the same — sets by members, functions and classes by
qualified name and code, plain objects by their state, memory addresses never."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from snapstate_capture.options import ValueOptions
from snapstate_capture.values import capture_value
from snapstate_capture.values.identity import identity, same_objects
from snapstate_capture.values.identity_at_capture import CAPTURE_BUDGET, capture_identity
from tests.conftest import ROOT


class Plain:
    """No __eq__: == is identity, the state is what counts."""

    def __init__(self, name, items):
        self.name = name
        self.items = items


class Hostile:
    """Every dynamic hook raises: identity must read it statically."""

    def __init__(self):
        self.value = 3

    def __getattr__(self, name):
        raise AssertionError(f"__getattr__({name}) ran")

    def __eq__(self, other):
        raise AssertionError("__eq__ ran")

    __hash__ = object.__hash__

    @property
    def computed(self):
        raise AssertionError("a property ran")


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


class Holder:
    def method(self):
        return 1

    @staticmethod
    def helper():
        return 2

    @property
    def prop(self):
        return 3


def test_sets_by_members_whatever_the_order():
    names = [f"name{i}" for i in range(157)]
    forward, backward = set(names), set()
    for name in reversed(names):
        backward.add(name)
    assert identity(forward) == identity(backward) == identity(set(reversed(names)))
    assert identity(forward) != identity(set(names[:-1]))
    assert identity({1, 2}) != identity(frozenset({1, 2}))  # the type still counts


def test_dicts_by_items_lists_by_order_types_distinct():
    assert identity({"a": 1, "b": [2, 3]}) == identity({"b": [2, 3], "a": 1})
    assert identity([1, 2]) != identity([2, 1])
    assert identity([1]) != identity((1,))
    assert len({identity(1), identity(1.0), identity(True)}) == 3
    assert identity("x" * 40) != identity("x" * 41)


def test_a_dict_of_scalars_rehashes_only_changed_items_and_gives_the_full_digest():
    """``capture_identity(obj, memo)`` keeps each item's digest while its key and value are
    the same objects; after any edit (a set key, a deleted one, ``True`` for ``1``, a new
    order, a new dict) it equals the full walk's digest, and a dict holding a container
    takes the walk."""
    memo: list = []
    table = {f"key{i}": f"text {i}" * 3 for i in range(100)}
    table[1] = "one"
    edits = [
        lambda t: t.__setitem__("key7", "changed"),
        lambda t: t.__setitem__("new", 3.5),
        lambda t: t.pop("key0"),
        lambda t: (t.pop(1), t.__setitem__(True, "one")),
        lambda t: [t.pop(k) for k in list(t)[:50]],
    ]
    assert capture_identity(table, memo) == identity(table)
    for edit in edits:
        before = capture_identity(table, [])
        edit(table)
        assert capture_identity(table, memo) == identity(table) != before
    before = identity(table)
    reordered = dict(sorted(table.items(), key=lambda kv: str(kv[0]), reverse=True))
    assert list(reordered) != list(table)
    assert capture_identity(reordered, memo) == identity(reordered) == before  # order: no
    again = dict(table)
    assert capture_identity(again, memo) == identity(table)
    table = {"a": 1, "b": [1, 2]}
    assert capture_identity(table, memo) == identity(table)
    table["b"].append(3)
    assert capture_identity(table, memo) == identity(table)


def test_a_dict_of_scalars_edited_at_random_always_gets_the_full_digest():
    """The memo's fast path (same keys: only the values that are other objects re-hashed and
    moved in the sorted digests, found by comparing identity readings) against the full walk
    after each of 600 random edits: values set to new, equal, the same or container objects,
    keys added, removed or reordered, a new dict with the same items."""
    import random

    rng = random.Random(19)
    memo: list = []
    table = {f"key{i}": i for i in range(60)}
    pool = ["same text", 3.5, None, True, 1, b"raw", "x" * 300, 10 ** 30, -0.0]
    for step in range(600):
        keys = list(table)
        choice = rng.randrange(10)
        if choice < 5:  # one or a few values set, as a scratchpad is
            for key in rng.sample(keys, rng.choice((1, 1, 2, 5))):
                table[key] = rng.choice([rng.choice(pool), f"text {step}", step * 1.5])
        elif choice == 5:
            table[keys[3]] = table[keys[3]]  # the same object again
        elif choice == 6 and len(table) > 10:
            table.pop(rng.choice(keys))
        elif choice == 7:
            table[f"new{step}"] = step
        elif choice == 8:
            items = list(table.items())
            rng.shuffle(items)
            table = dict(items)
        else:
            table[keys[-1]] = [step]  # a container: the walk, then back to scalars
            assert capture_identity(table, memo) == identity(table)
            table[keys[-1]] = step
        assert capture_identity(table, memo) == identity(table), step


def test_shared_and_copied_parts_are_the_same_value():
    part = ["shared", "list"]
    assert identity([part, part]) == identity([part, list(part)])
    cyclic_a, cyclic_b = [1], [1]
    cyclic_a.append(cyclic_a)
    cyclic_b.append(cyclic_b)
    assert identity(cyclic_a) == identity(cyclic_b) is not None


def test_functions_methods_classes_properties_by_name_and_code():
    def local(x):
        return x + 1

    def other(x):
        return x + 2

    assert identity(local) == identity(local)
    assert identity(local) != identity(other)
    assert identity(Holder().method) == identity(Holder().method)  # bound to two instances
    assert identity(Holder.__dict__["helper"]) == identity(Holder.__dict__["helper"])
    assert identity(Holder.__dict__["prop"]) != identity(Holder.__dict__["helper"])
    assert identity(Holder) != identity(Plain)
    assert identity(json) == identity(sys.modules["json"])
    assert identity(len) == identity(len) and identity(len) != identity(repr)


def test_objects_by_state_read_statically():
    assert Plain("a", [1]) != Plain("a", [1])  # what == says
    assert same_objects(Plain("a", [1]), Plain("a", [1]))
    assert not same_objects(Plain("a", [1]), Plain("a", [2]))
    assert same_objects(Slotted(1, "x"), Slotted(1, "x"))
    assert not same_objects(Slotted(1, "x"), Slotted(2, "x"))
    assert identity(Hostile()) == identity(Hostile()) is not None


def test_addresses_never_count():
    first, second = object(), object()
    assert repr(first) != repr(second)
    assert identity(first) == identity(second)
    assert identity([Plain("a", first)]) == identity([Plain("a", second)])


def test_over_budget_is_unknown_not_different():
    big = [Plain(str(i), [i]) for i in range(CAPTURE_BUDGET)]
    assert identity(big, budget=100) is None
    assert capture_identity(list(range(CAPTURE_BUDGET + 1))) is None
    assert identity(big) is not None


def test_capture_stores_the_identity_in_the_preview_but_never_for_secrets():
    options = ValueOptions()
    names = {f"name{i}" for i in range(157)}
    captured = capture_value(names, name="names", options=options)
    assert captured.preview["identity"] == identity(names)
    secret = capture_value({"api_key": "sk-123", "model": "m"}, name="cfg", options=options)
    assert "identity" not in secret.preview


_CHILD = """
import ast, json, sys
from pyflakes import checker
from snapstate_capture.options import ValueOptions
from snapstate_capture.values import capture_value
from snapstate_capture.values.identity import identity
tree = ast.parse(open(sys.argv[1]).read())
check = checker.Checker(tree, filename=sys.argv[1])
names = set(check.builtIns)
preview = capture_value(names, name="names", options=ValueOptions()).preview
print(json.dumps([identity(check), identity(names), preview,
                  identity(checker.Binding.redefines), identity(check.handleNode)]))
"""


def test_the_same_pyflakes_state_in_two_processes_under_two_hash_seeds(tmp_path):
    """pyflakes' checker (sets of names, bound handlers, plain objects holding an AST) and the
    157-name builtins set: the same identity and the same set preview whatever the seed."""
    pytest.importorskip("pyflakes")
    source = tmp_path / "mod.py"
    source.write_text("import os\n\ndef f(a):\n    b = a + 1\n    return undefined_name\n")
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        result = subprocess.run([sys.executable, "-c", _CHILD, str(source)], env=env,
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        outputs.append(json.loads(result.stdout))
    (check_a, names_a, preview_a, *funcs_a), (check_b, names_b, preview_b, *funcs_b) = outputs
    assert check_a == check_b is not None
    assert names_a == names_b and preview_a == preview_b
    assert preview_a["len"] > 150 and preview_a.get("more")
    assert funcs_a == funcs_b


def _make_closure():
    seen = []

    def remember(item):
        seen.append(item)
        return remember, len(seen)

    remember.tag = "kept"
    return remember


def test_closures_are_written_by_the_c_pickler_and_load_back():
    """A closure (pyflakes defers dozens) is written by pickle, not dill — dill copied its
    whole world in pure Python at every step — and loads back working, cycle included."""
    from snapstate_capture.values.payload import loads, serialize

    remember = _make_closure()
    remember("a")
    written = serialize({"deferred": [remember, lambda x: x * 3]}, ValueOptions())
    assert written.serializer == "pickle" and written.loadable, written.error
    loaded = loads(written.serializer, written.data)
    again, count = loaded["deferred"][0]("b")
    assert count == 2 and again is loaded["deferred"][0] and again.tag == "kept"
    assert loaded["deferred"][1](4) == 12
    assert identity(loaded["deferred"][0]) == identity(remember)


def test_an_asyncio_queue_by_its_items_not_by_the_tasks_waiting_on_it():
    """Which workers already wait in ``queue.get()`` at a step is the scheduler's doing
    (helper-36: a replay of workers sharing a queue diverged at ``_getters``, 5 of 5)."""
    import asyncio

    class Jobs(asyncio.Queue):
        pass

    async def main():
        waited, idle, other = Jobs(), Jobs(), Jobs()
        getter = asyncio.ensure_future(waited.get())
        await asyncio.sleep(0)  # the getter waits on ``waited`` now
        assert len(waited._getters) == 1 and not idle._getters
        for queue, item in ((waited, 1), (idle, 1), (other, 2)):
            queue._queue.append(item)  # the same items, but not for ``other``
        digests = [identity(q) for q in (waited, idle, other)]
        getter.cancel()
        return digests

    waited, idle, other = asyncio.run(main())
    assert waited == idle
    assert waited != other
    assert identity(asyncio.Queue(maxsize=1)) != identity(asyncio.Queue(maxsize=2))


def test_rpds_maps_and_sets_by_members_whatever_their_order():
    """rpds' ``HashTrieMap`` pickles its items in an order of the process's hash seed
    (jsonschema's registries hold them; helper-36: replay and diff diverged there)."""
    import rpds  # jsonschema's, a dependency of snapstate's
    items = [(f"key{n}", n) for n in range(40)]
    script = ("import sys, rpds; from snapstate_capture.values.identity import identity; "
              "n = int(sys.argv[1]); "
              "print(identity(rpds.HashTrieMap([(f'key{i}', i) for i in range(40)])), "
              "identity(rpds.HashTrieSet([f'key{i}' for i in range(n)])))")
    seen = set()
    for seed in ("1", "2", "3"):
        done = subprocess.run([sys.executable, "-c", script, "40"], capture_output=True,
                              text=True, env={**os.environ, "PYTHONHASHSEED": seed,
                                              "PYTHONPATH": str(ROOT)}, timeout=60)
        assert done.returncode == 0, done.stderr
        seen.add(done.stdout)
    assert len(seen) == 1, seen
    assert identity(rpds.HashTrieMap(items)) != identity(rpds.HashTrieMap(items[:-1]))
    assert identity(rpds.HashTrieMap(items)) == identity(rpds.HashTrieMap(list(reversed(items))))


def test_a_jsonschema_validator_is_one_value_and_one_preview_whatever_the_hash_seed():
    """A validator's registry holds ``referencing`` objects of attrs classes, whose generated
    ``__hash__`` has a constant made with ``hash()`` of a string (another in every process),
    and rpds maps, whose own repr follows the hash seed: two runs of one program gave two
    digests and two previews, and ``snapstate diff`` said they differ (this session's
    jsonschema program, 2 of 2 runs)."""
    script = ("import jsonschema, rpds\n"
              "from snapstate_capture.options import ValueOptions\n"
              "from snapstate_capture.values.identity import identity\n"
              "from snapstate_capture.values.preview import PreviewBuilder\n"
              "v = jsonschema.Draft202012Validator({'type': 'object', 'properties': "
              "{'b': {'$ref': '#/$defs/s'}}, '$defs': {'s': {'type': 'string'}}})\n"
              "errors = list(v.iter_errors({'b': 3}))\n"
              "trie = rpds.HashTrieMap([(f'key{i}', (i, 'x')) for i in range(30)])\n"
              "print(identity(v), PreviewBuilder(ValueOptions()).build(trie)['repr'])\n")
    seen = set()
    for seed in ("1", "2", "3"):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": seed,
                                   "PYTHONPATH": str(ROOT)}, timeout=60)
        assert done.returncode == 0, done.stderr
        seen.add(done.stdout)
    assert len(seen) == 1, seen
    digest, shown = seen.pop().split(" ", 1)
    assert len(digest) == 32
    assert shown.startswith("HashTrieMap({'key0': (0, 'x'), 'key1': (1, 'x'), 'key10': ")

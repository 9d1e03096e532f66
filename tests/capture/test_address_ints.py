"""Ints that are object addresses (``values/addresses.py``): the identity digest writes the id
of a part of the same value, or of a local on the stack, as an address, so two processes
holding the same memo compare equal; any other int stays a number, so a real change of a big
int is still a divergence. The replay of a whole package that keys memos by ``id()``
(networkx, fully traced) is in ``tests/corpus/test_replay_packages.py``."""

from __future__ import annotations

import sys

import textwrap

from snapstate_capture.values.addresses import (could_be_address, holds_stack_address,
                                                local_address)
from snapstate_capture.values.identity import identity
from snapstate_capture.values.identity_at_capture import capture_identity
from tests.conftest import run_cli


class Node:
    def __init__(self, name: str) -> None:
        self.name = name


def test_an_id_of_a_part_of_the_value_digests_as_an_address():
    first, second = Node("f"), Node("f")
    assert identity({id(first): ("argmap_f", first)}) == identity({id(second): ("argmap_f", second)})
    assert identity([id(first), first]) == identity([id(second), second])
    # the same shape with a number that is no part's id: a different value
    assert identity({id(first): ("argmap_f", first)}) != identity({1 << 40: ("argmap_f", first)})
    # which part it is the id of is not told apart, but a different part is still a different value
    assert identity({id(first): first}) != identity({id(first): Node("g")})


def _seen_digests(first: int, second: int) -> tuple:
    """Digests of memos of the ids of two locals, made anew at each call (other addresses)."""
    entered, other = [], []
    return (identity({id(entered)}), capture_identity({id(entered): first, id(other): second}, []),
            holds_stack_address({id(entered)}), holds_stack_address((id(other), 1)))


def test_an_id_of_a_local_on_the_stack_digests_as_that_local():
    once, again = _seen_digests(5, 7), _seen_digests(5, 7)
    assert once == again and once[2] and once[3]
    # the values under two ids swapped: another value (an address names its local)
    assert _seen_digests(7, 5)[1] != once[1]


def _bare_ids(which: str) -> tuple:
    """A bare int, the id of a local (``key = id(node)``), captured anew at each call."""
    node, other = Node("n"), Node("o")
    key = id(node) if which == "node" else id(other)
    return capture_identity(key), holds_stack_address(key), local_address(key)


def test_a_bare_int_that_is_the_id_of_a_local_names_that_local():
    once = _bare_ids("node")
    assert once == _bare_ids("node") and once[0] is not None and once[1]
    assert once[2] == "_bare_ids.node"
    assert _bare_ids("other")[0] != once[0]  # the id of another local: another value
    assert capture_identity(1 << 40) is None and local_address(1 << 40) is None


def test_a_memo_of_id_keyed_tuples_holds_a_stack_address():
    """dataclasses' ``repr_running``: ``{(id(self), thread ident)}`` — a set's tuple members
    and a dict's tuple keys are looked into, a list's tuples are not (no memo's shape)."""
    node = Node("n")
    assert holds_stack_address({(id(node), 7)}) and holds_stack_address({(id(node), 7): 1})
    assert not holds_stack_address({(1 << 40, 7)}) and not holds_stack_address([(id(node), 7)])


def test_big_ints_that_are_no_address_compare_by_number():
    big = 1 << 40
    assert could_be_address(big) and not could_be_address(big + 1)
    assert identity({big}) != identity({big + 16})
    assert capture_identity({"size": big}, []) != capture_identity({"size": big + 16}, [])
    assert not holds_stack_address({big, big + 16})
    assert not holds_stack_address({"a": 1})


PROGRAM = textwrap.dedent("""
    def walk(items, seen):
        if id(items) in seen:
            return 0
        seen.add(id(items))
        return sum(walk(i, seen) if isinstance(i, list) else BIG + i for i in items)

    BIG = 1 << 40
    print(walk([1, [2, [3]], SIZE], set()))
""")


def test_a_traced_memo_of_ids_replays_and_a_changed_big_int_diverges(tmp_path):
    program = tmp_path / "walk.py"
    program.write_text(PROGRAM.replace("SIZE", "BIG"))
    recorded = run_cli("record", "--trace", "calls", "-o", str(tmp_path / "walk.snap"),
                       str(program), cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    replayed = run_cli("replay", str(tmp_path / "walk.snap"), cwd=tmp_path)
    assert "no divergence" in replayed.stdout, replayed.stdout + replayed.stderr
    program.write_text(PROGRAM.replace("SIZE", "BIG + 16"))  # a big int, not an address
    changed = run_cli("replay", str(tmp_path / "walk.snap"), "--allow-drift", cwd=tmp_path)
    assert "divergence at step" in changed.stdout, changed.stdout + changed.stderr


def test_an_id_of_an_object_beneath_a_local_is_named_by_its_path():
    """``stack_addresses`` looks beneath the locals too for a memo's ids (``_beneath_locals``):
    list items, dict values and attributes read statically, a few steps down."""
    from snapstate_capture.values.addresses import stack_addresses

    class Holder:
        def __init__(self, inner):
            self.parts = [None, {"key": inner}]

    inner = object()
    holder = Holder(inner)
    wanted = id(inner)
    del inner
    # (with a trace function left by another test in this worker, an untraced frame's
    # locals are not read: this test's frame is read as the program's when none runs)
    trace, profile = sys.gettrace(), sys.getprofile()
    sys.settrace(None)
    sys.setprofile(None)
    try:
        assert stack_addresses([wanted]) == {}  # a list's numbers: not walked for
        found = stack_addresses([wanted], memo=True)  # a set's members: a memo of ids
    finally:
        sys.settrace(trace)
        sys.setprofile(profile)
    assert found[wanted].endswith(".holder.parts[1]['key']"), found
    assert holder


def test_an_id_of_a_string_beneath_a_local_is_named_bare_or_in_a_memo():
    """A leaf beneath a local (a string, not entered) is named too, and a bare int is looked
    for beneath the locals as a memo's members are: PyYAML's ``flatten_mapping`` keeps
    ``key_id = id(pair[0].value)`` and a set of such ids."""
    from snapstate_capture.values.addresses import local_address, stack_addresses

    class Scalar:
        def __init__(self, value):
            self.value = value

    pair = (Scalar("".join(("key", "0"))), 1)
    wanted = id(pair[0].value)
    trace, profile = sys.gettrace(), sys.getprofile()
    sys.settrace(None)
    sys.setprofile(None)
    try:
        in_memo = stack_addresses([wanted], memo=True)
        bare = local_address(wanted)
    finally:
        sys.settrace(trace)
        sys.setprofile(profile)
    assert in_memo[wanted].endswith(".pair[0].value"), in_memo
    assert bare is not None and bare.endswith(".pair[0].value"), bare


def test_a_path_beneath_a_dict_keyed_by_ids_names_no_address():
    """A path through a dict keyed by ids (``copy.deepcopy``'s memo) shows ``[…]`` for such
    a key: its number made the name of what lies beneath another in every process (a bounded
    memo's labels in a narrowed lark recording)."""
    from snapstate_capture.values.addresses import stack_addresses

    inner = Node("x")
    memo = {id(inner): [Node("copy")], "name": 1}
    wanted = id(memo[id(inner)][0])
    trace, profile = sys.gettrace(), sys.getprofile()
    sys.settrace(None)
    sys.setprofile(None)
    try:
        found = stack_addresses([wanted], memo=True)
    finally:
        sys.settrace(trace)
        sys.setprofile(profile)
    assert found[wanted].endswith(".memo[…][0]"), found
    assert inner


def _deepcopy_memo_digest() -> tuple[str | None, tuple]:
    original = [Node("one")]
    memo = {id(original): [], id(original[0]): Node("one")}
    memo[id(memo)] = [original, original[0]]  # copy.deepcopy's keep-alive list
    return identity(memo), (memo, original)


def test_a_memo_holding_its_own_id_digests_alike_at_other_addresses():
    """``copy.deepcopy``'s memo holds ``id(memo)``: named as the value itself, not by its own
    first digest, which held that id as a number."""
    first, kept = _deepcopy_memo_digest()
    second, kept_too = _deepcopy_memo_digest()  # the first still alive: other addresses
    assert first == second and kept[0] is not kept_too[0]


def _memo_beside(inner_id):
    from snapstate_capture.values.addresses import stack_addresses

    class Holder:
        def __init__(self, inner):
            self.parts = [None, {"key": inner}]

    holder = Holder(_KEPT[0])
    found = stack_addresses([inner_id], memo=True)
    assert holder
    return found


_KEPT: list = []


def test_the_innermost_frame_is_searched_before_a_callers_big_graph():
    """A caller holding a big graph (pytest's session under every test) spent the search's
    whole budget before the frame that made the memo was looked beneath: the test above
    failed in the full suite only."""
    _KEPT[:] = [object()]
    crowd = [{"row": index} for index in range(20_000)]  # a caller's big local
    trace, profile = sys.gettrace(), sys.getprofile()
    sys.settrace(None)
    sys.setprofile(None)
    try:
        found = _memo_beside(id(_KEPT[0]))
    finally:
        sys.settrace(trace)
        sys.setprofile(profile)
    assert found[id(_KEPT[0])].endswith(".holder.parts[1]['key']"), found
    assert crowd


def test_ints_below_the_processs_memory_are_never_searched_for(monkeypatch):
    """Checking a bare int for being a local's id walks the stack: a traced loop over aligned
    ints from 2**21 (a counter, a byte count) ran 1.9x as long. Ints below this process's
    lowest writable memory cannot be ids and are not searched for; an id still is found."""
    import sys

    from snapstate_capture.values import addresses

    from tests.conftest import count_calls

    searched = count_calls(monkeypatch, addresses, "stack_addresses")
    held = object()
    assert addresses.local_address(id(held)) == \
        "test_ints_below_the_processs_memory_are_never_searched_for.held"
    lowest = addresses.lowest_object()
    if sys.platform == "linux":  # /proc/self/maps: the interpreter's data segment and up
        assert lowest > addresses.ADDRESS_MIN
        assert lowest <= min(id(None), id(held), id(sys))
    else:
        assert lowest == addresses.ADDRESS_MIN
    below = lowest - 8 - lowest % 8
    searched.clear()
    if below >= addresses.ADDRESS_MIN:
        assert addresses.local_address(below) is None and searched == []
    assert addresses.could_be_address(1 << 21)  # text keeps its rule in every process

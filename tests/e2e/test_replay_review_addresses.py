"""Cases an adversarial review of the address and by-value rules found (12-06): values under
two ids swapped were digested alike (an address named nothing); reading an untraced caller's
locals for addresses kept its dropped object alive under the tracer; and a class defined at
run time made every instance of it bounded, so a change inside one went unseen on replay."""

from __future__ import annotations

import textwrap

from tests.conftest import run_cli


def _record_and_replay(tmp_path, program: str, first: str, second: str, *options: str):
    (tmp_path / "prog.py").write_text(textwrap.dedent(program))
    (tmp_path / "in.txt").write_text(first)
    path = tmp_path / "run.snap"
    recorded = run_cli("record", "--trace", "lines", *options, "-o", str(path), "prog.py",
                       cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    same = run_cli("replay", str(path), cwd=tmp_path)
    assert "no divergence" in same.stdout, same.stdout + same.stderr
    (tmp_path / "in.txt").write_text(second)
    return run_cli("replay", str(path), cwd=tmp_path)


def test_values_under_two_ids_swapped_are_a_divergence(tmp_path):
    changed = _record_and_replay(tmp_path, """
        class Account:
            pass

        def main():
            a, b = Account(), Account()
            balances = dict(zip((id(a), id(b)), map(int, open("in.txt").read().split())))
            return balances[id(a)]

        print(main())
    """, "5 7", "7 5")
    assert "divergence at step" in changed.stdout, changed.stdout + changed.stderr


def test_a_change_inside_an_instance_of_a_class_defined_at_run_time_is_a_divergence(tmp_path):
    changed = _record_and_replay(tmp_path, """
        def main():
            class State:
                pass
            state = State()
            state.data = {"scores": {"alice": int(open("in.txt").read().split()[0])}}
            return state.data["scores"]["alice"]

        print(main())
    """, "5 7", "9 7")
    assert "divergence at step" in changed.stdout, changed.stdout + changed.stderr


def test_an_untraced_caller_s_dropped_object_dies_when_it_is_dropped(tmp_path):
    (tmp_path / "lib_outer.py").write_text(textwrap.dedent("""
        import weakref

        class Thing:
            pass

        def outer(callback):
            big = Thing()
            ref = weakref.ref(big, lambda _: print("callback fired"))
            callback()
            del big
            print("after del, alive:", ref() is not None)
    """))
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import lib_outer

        def traced():
            numbers = [8 * 1_000_003, 1]   # an int that could be an address: the stack is read
            return len(numbers)

        lib_outer.outer(traced)
    """))
    done = run_cli("record", "--trace", "lines", "--include", "*/prog.py", "-o",
                   str(tmp_path / "k.snap"), "prog.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == ["callback fired", "after del, alive: False"]

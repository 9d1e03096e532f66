"""The pytest plugin (``pytest11`` entry point): real pytest runs in child processes record each
test and keep only the failing tests' timelines, one per test, with one line per failure
naming the command that opens it at the failing step — alone and under pytest-xdist."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import snapstate_capture as snap
from tests.conftest import ROOT, cli_on_a_terminal, run_cli, run_python

SUITE = textwrap.dedent('''
    def total(items):
        result = 0
        for item in items:
            result += item["price"] * item.get("qty", 1)
        return result

    def test_adds_prices():
        assert total([{"price": 2}, {"price": 3}]) == 5

    def test_counts_quantities():
        basket = [{"price": 2, "qty": 3}, {"price": 5}]
        assert total(basket) == 10

    def test_missing_price():
        total([{"price": 1}, {"qty": 1}])
''')
LINE = re.compile(r"^snapstate: (\S+) failed: (snapstate (\S+) --step (\d+))"
                  r"(?:; in pdb at its frame: snapstate replay (\S+) --to (\d+) --pdb)?$", re.M)


def _pytest(tmp_path: Path, *args: str, autoload: bool = False, suite: str = SUITE):
    """pytest on the basket suite in a child process. ``autoload``: every installed plugin, as
    a user has it (the plugin comes in through its ``pytest11`` entry point); else only ours
    and xdist's, named with ``-p`` (a child pytest starts several times faster)."""
    (tmp_path / "test_basket.py").write_text(suite)
    plugins = [] if autoload else ["-p", "snapstate_capture.integrations.pytest_plugin",
                                   "-p", "xdist.plugin"]
    env = {} if autoload else {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return run_python("-m", "pytest", "-q", "-p", "no:cacheprovider", *plugins, *args,
                      "test_basket.py", cwd=tmp_path, env=env, timeout=240)


def _failures(out: str) -> dict[str, tuple[str, str, int]]:
    return {m[0]: (m[1], m[2], int(m[3])) for m in LINE.findall(out)}


def _pdb_steps(out: str) -> dict[str, int]:
    """The step each failure's line says ``replay --to STEP --pdb`` stops at."""
    return {m[0]: int(m[5]) for m in LINE.findall(out) if m[5] and m[4] == m[2]}


def _check_timelines(tmp_path: Path, failures: dict[str, tuple[str, str, int]]) -> None:
    kept = sorted(p.name for p in (tmp_path / ".snapstate" / "tests").iterdir())
    assert kept == ["test_basket.py--test_counts_quantities.snap",
                    "test_basket.py--test_missing_price.snap"]  # nothing of the passing test
    command, path, step = failures["test_basket.py::test_missing_price"]
    with snap.open_timeline(tmp_path / path) as timeline:
        run = timeline.runs[-1]
        assert run.name == "test_basket.py::test_missing_price" and run.status == "failed"
        failing = run.steps[step]  # where the KeyError was raised, in total()
        assert (failing.kind, failing.function) == ("exception", "total")
        assert failing.frames[-1].locals["item"].repr == "{'qty': 1}"
        assert failing.frames[-1].locals["result"].repr == "1"
    command, path, step = failures["test_basket.py::test_counts_quantities"]
    with snap.open_timeline(tmp_path / path) as timeline:
        failing = timeline.runs[-1].steps[step]
        assert (failing.kind, failing.function) == ("exception", "test_counts_quantities")
        assert any(s.function == "total" and s.kind == "return"
                   and s.extra["return"].repr == "11" for s in timeline.runs[-1].steps)
    assert shlex.split(command) == ["snapstate", path, "--step", str(step)]
    shown = run_cli("show", path, "--step", str(step), cwd=tmp_path)
    assert shown.returncode == 0 and f"step {step} of" in shown.stdout
    assert "exception" in shown.stdout and "test_counts_quantities" in shown.stdout


def test_failing_tests_keep_their_timelines_and_name_the_command(tmp_path):
    done = _pytest(tmp_path, "--snapstate", autoload=True)  # through the entry point
    assert done.returncode == 1, done.stdout + done.stderr
    failures = _failures(done.stdout)
    assert set(failures) == {"test_basket.py::test_counts_quantities",
                             "test_basket.py::test_missing_price"}
    _check_timelines(tmp_path, failures)
    # The suite fixed: the next run removes the old timelines of tests that now pass.
    fixed = SUITE.replace("== 10", "== 11")
    again = _pytest(tmp_path, "--snapstate", suite=fixed)
    assert again.returncode == 1 and set(_failures(again.stdout)) == {
        "test_basket.py::test_missing_price"}
    assert sorted(p.name for p in (tmp_path / ".snapstate" / "tests").iterdir()) == [
        "test_basket.py--test_missing_price.snap"]


def test_with_xdist_the_controller_prints_each_workers_failures(tmp_path):
    done = _pytest(tmp_path, "--snapstate=calls", "-n", "2")
    assert done.returncode == 1, done.stdout + done.stderr
    failures = _failures(done.stdout)
    assert len(LINE.findall(done.stdout)) == 2  # once each, by the controller only
    _check_timelines(tmp_path, failures)


def test_include_traces_an_installed_librarys_frames(tmp_path):
    """By default only code under the current directory is traced (a library installed
    elsewhere shows no frames); ``--snapstate-include`` globs trace exactly the files they
    match: the library's, with the tests'."""
    library = tmp_path / "site" / "shoplib"
    library.mkdir(parents=True)
    (library / "__init__.py").write_text(textwrap.dedent('''
        def line_total(item):
            return item["price"] * item.get("qty", 1)

        def total(items):
            return sum(line_total(item) for item in items)
    '''))
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_shop.py").write_text(textwrap.dedent('''
        from shoplib import total

        def test_missing_price():
            assert total([{"price": 1}, {"qty": 1}]) == 1
    '''))
    traced = {}
    for label, extra in (("default", []), ("included", ["--snapstate-include", "*/shoplib/*",
                                                        "--snapstate-include", "test_*.py"])):
        done = run_python("-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                          "snapstate_capture.integrations.pytest_plugin", "--snapstate", *extra,
                          "test_shop.py", cwd=suite, timeout=240,
                          env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                               "PYTHONPATH": str(tmp_path / "site")})
        assert done.returncode == 1, done.stdout + done.stderr
        command, path, step = _failures(done.stdout)["test_shop.py::test_missing_price"]
        with snap.open_timeline(suite / path) as timeline:
            steps = timeline.runs[-1].steps
            traced[label] = {s.function for s in steps if s.kind == "call"}
            failing = steps[step]
            if label == "included":  # opened where the KeyError was raised, in the library
                assert (failing.kind, failing.function) == ("exception", "line_total")
                assert failing.frames[-1].locals["item"].repr == "{'qty': 1}"
        shutil.rmtree(suite / ".snapstate")
    assert not traced["default"] & {"total", "line_total"}
    assert {"total", "line_total"} <= traced["included"]


def test_lines_mode_records_every_line(tmp_path):
    done = _pytest(tmp_path, "--snapstate=lines", "-k", "missing")
    path = _failures(done.stdout)["test_basket.py::test_missing_price"][1]
    with snap.open_timeline(tmp_path / path) as timeline:
        kinds = {s.kind for s in timeline.runs[-1].steps}
    assert "line" in kinds and "exception" in kinds


def test_off_unless_asked(tmp_path):
    done = _pytest(tmp_path, autoload=True)  # installed, but off
    assert done.returncode == 1 and "snapstate:" not in done.stdout
    assert not (tmp_path / ".snapstate").exists()
    bad = _pytest(tmp_path, "--snapstate=everything")
    assert bad.returncode == 4 and "--snapstate=everything: expected one of calls, lines" in \
        bad.stderr


HYPOTHESIS_SUITE = textwrap.dedent('''
    from hypothesis import given, strategies as st

    def count_to(n):
        """Cheap plain (a ~1 µs call n times), slow recorded (a call step each)."""
        def next_one(i):
            return i + 1
        total = 0
        for _ in range(n):
            total = next_one(total)
        return total

    @given(st.integers(0, 5))
    def test_counts(extra):
        with open("examples.txt", "a") as seen:
            seen.write("x")
        assert count_to(CALLS + extra) == CALLS + extra
''')
PATIENT_PROFILE = textwrap.dedent('''
    from datetime import timedelta
    from hypothesis import settings

    def pytest_configure(config):
        settings.register_profile("patient", max_examples=4, deadline=timedelta(milliseconds=60))
        settings.load_profile("patient")
''')


def test_hypothesis_deadlines_are_off_while_recording(tmp_path):
    """A Hypothesis test whose examples take a few ms plain and far longer recorded passes
    under --snapstate: its deadline is lifted before test modules import hypothesis (a
    conftest's profile, keeping its other settings; or hypothesis' default profile, when the
    test module is the first to import it)."""
    with_profile = tmp_path / "with_profile"
    first_import = tmp_path / "first_import"
    for where, calls in ((with_profile, 20_000), (first_import, 60_000)):
        where.mkdir()
        (where / "test_counting.py").write_text(f"CALLS = {calls}\n" + HYPOTHESIS_SUITE)
    (with_profile / "conftest.py").write_text(PATIENT_PROFILE)
    for where, autoload in ((with_profile, True), (first_import, False)):
        plugins = [] if autoload else ["-p", "snapstate_capture.integrations.pytest_plugin"]
        env = {} if autoload else {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        done = run_python("-m", "pytest", "-p", "no:cacheprovider", *plugins, "--snapstate",
                          "test_counting.py", cwd=where, env=env, timeout=240)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Hypothesis deadlines are off while recording" in done.stdout
        if where is with_profile:  # the conftest's profile, but for its deadline
            assert (where / "examples.txt").read_text() == "x" * 4
        assert not (where / ".snapstate" / "tests").exists() or not any(
            (where / ".snapstate" / "tests").iterdir())


def test_a_finished_tests_recording_is_let_go_of(tmp_path):
    """pytest keeps every item to the end of the session: a test's record block must not stay
    in it, or each later garbage collection walks every test's recorder (a suite of 1,000
    small tests spent ~0.3 s more in pytest's own final ``gc.collect`` calls)."""
    (tmp_path / "conftest.py").write_text(textwrap.dedent('''
        import gc

        def pytest_sessionfinish(session):
            from snapstate_capture.capture.recorder import Recorder
            gc.collect()
            alive = sum(isinstance(o, Recorder) for o in gc.get_objects())
            print(f"\\nrecorders alive: {alive}")
    '''))
    suite = textwrap.dedent('''
        import pytest

        @pytest.mark.parametrize("number", range(30))
        def test_next_number_is_larger(number):
            assert number + 1 > number

        def test_fails():
            assert 1 == 2
    ''')
    done = _pytest(tmp_path, "--snapstate", "-s", suite=suite)
    assert done.returncode == 1, done.stdout + done.stderr
    alive = re.search(r"recorders alive: (\d+)", done.stdout)
    assert alive and int(alive[1]) <= 1, done.stdout  # the failure's, held by its traceback
    assert _failures(done.stdout).keys() == {"test_basket.py::test_fails"}


def test_a_suites_thread_leak_check_passes_recorded(tmp_path):
    """A fixture that fails a test leaving threads behind (a common guard) passed plain and
    failed under ``--snapstate``: the flusher thread outlived the recorded call phase."""
    (tmp_path / "conftest.py").write_text(textwrap.dedent('''
        import threading
        import pytest

        @pytest.fixture(autouse=True)
        def no_thread_leak():
            before = set(threading.enumerate())
            yield
            leaked = [t.name for t in set(threading.enumerate()) - before]
            assert not leaked, f"test leaked threads: {leaked}"
    '''))
    done = _pytest(tmp_path, "--snapstate", suite=textwrap.dedent('''
        def add(a, b):
            return a + b

        def test_adds():
            assert add(1, 2) == 3

        def test_adds_again():
            assert add(2, 2) == 4
    '''))
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr


def test_subtest_reports_leave_the_tests_timeline_to_the_test(tmp_path):
    """pytest-subtests makes a call report per subtest while the test runs; the first one
    kept or dropped the test's recording, so a test failing after it kept no timeline. The
    conftest makes such reports as pytest-subtests does (``ihook.pytest_runtest_makereport``
    from inside the test)."""
    (tmp_path / "conftest.py").write_text(textwrap.dedent('''
        import pytest
        from _pytest.runner import CallInfo

        @pytest.fixture
        def subtest(request):
            def run(check):
                call = CallInfo.from_call(check, when="call")
                request.node.ihook.pytest_runtest_makereport(item=request.node, call=call)
            return run
    '''))
    done = _pytest(tmp_path, "--snapstate", suite=textwrap.dedent('''
        def total(items):
            return sum(item["price"] for item in items)

        def test_prices(subtest):
            subtest(lambda: total([{"price": 1}]))  # passes
            total([{"price": 1}, {"qty": 2}])       # the test fails after it
    '''))
    assert done.returncode == 1, done.stdout + done.stderr
    assert _failures(done.stdout).keys() == {"test_basket.py::test_prices"}, done.stdout
    kept = list((tmp_path / ".snapstate" / "tests").glob("*.snap"))
    assert [p.name for p in kept] == ["test_basket.py--test_prices.snap"]
    with snap.open_timeline(kept[0]) as timeline:
        assert any(step.kind == "exception" and step.function == "total"
                   for step in timeline.runs[-1].steps)
    # a failing subtest in a test that passes itself keeps the test's timeline too
    shutil.rmtree(tmp_path / ".snapstate")
    done = _pytest(tmp_path, "--snapstate", suite=textwrap.dedent('''
        def total(items):
            return sum(item["price"] for item in items)

        def test_prices(subtest):
            subtest(lambda: total([{"qty": 2}]))  # this subtest fails
            assert total([{"price": 1}]) == 1     # the test itself passes
    '''))
    assert _failures(done.stdout).keys() == {"test_basket.py::test_prices"}, done.stdout
    assert [p.name for p in (tmp_path / ".snapstate" / "tests").glob("*.snap")] == [
        "test_basket.py--test_prices.snap"]


def _replay_in_pdb(tmp_path, path, step):
    """``snapstate replay PATH --to STEP --pdb`` printing the frame's ``item``, then on."""
    return run_cli("replay", path, "--to", str(step), "--pdb", cwd=tmp_path,
                   input="p item\nc\n", timeout=120)


def _call_of_total(tmp_path, path):
    with snap.open_timeline(tmp_path / path) as timeline:
        return next(s.index for s in timeline.runs[-1].steps
                    if s.kind == "call" and s.function == "total")


def test_a_failing_tests_timeline_replays_that_test_alone_into_pdb(tmp_path):
    """Its replay ran the whole suite under pytest's output capture, so pdb never showed
    (and under -n 2 there was no entry to replay at all: 'no replayable entry'). It runs
    ``pytest`` on the one test, capture off; the kept timeline replays without divergence
    and a stop opens pdb on the recorded frame. Replays leave no scratch directories."""
    for workers in ([], ["-n", "2"]):
        shutil.rmtree(tmp_path / ".snapstate", ignore_errors=True)
        done = _pytest(tmp_path, "--snapstate", *workers)
        assert done.returncode == 1, done.stdout + done.stderr
        _, path, _ = _failures(done.stdout)["test_basket.py::test_missing_price"]
        replayed = run_cli("replay", path, cwd=tmp_path, timeout=120)
        assert "no divergence" in replayed.stdout, replayed.stdout + replayed.stderr
        assert "1 item" in replayed.stdout or "collected 1 item" in replayed.stdout
        # the header says what this run is: a replay keeps nothing (it said "recording each
        # test ... kept in .snapstate/tests")
        assert "replaying this test's timeline" in replayed.stdout, replayed.stdout
        assert "recording each test" not in replayed.stdout, replayed.stdout
        call = _call_of_total(tmp_path, path)
        # the failure's line gives it: a traced replay stops at the failing frame's call
        assert _pdb_steps(done.stdout)["test_basket.py::test_missing_price"] == call
        stopped = _replay_in_pdb(tmp_path, path, call)
        assert f"replay reached step {call} (call in total" in stopped.stdout, stopped.stdout
        assert "(Pdb)" in stopped.stdout and "no divergence" in stopped.stdout
        assert sorted(p.name for p in (tmp_path / ".snapstate" / "tests").iterdir()) == [
            "test_basket.py--test_counts_quantities.snap",
            "test_basket.py--test_missing_price.snap"], workers


def test_a_tests_replay_says_its_outcome_on_a_line_of_its_own(tmp_path):
    """The replay ends at the test's last step, after pytest wrote ``test_basket.py `` and
    before the test's outcome: the verdict was printed on the end of that progress line."""
    done = _pytest(tmp_path, "--snapstate")
    _, path, _ = _failures(done.stdout)["test_basket.py::test_missing_price"]
    _, _, shown = cli_on_a_terminal("replay", "--quiet", path, cwd=tmp_path, columns=120,
                                    stdout_too=True)
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)
    lines = [line.strip() for line in shown.replace("\r", "\n").splitlines()]
    assert "test_basket.py" in lines, shown
    # the verdict names the failure the replay reproduced (it printed nothing of it)
    verdict = r"replayed \d+ steps, no divergence; the run ends in KeyError: '.+', as recorded"
    assert any(re.fullmatch(verdict, line) for line in lines), shown
    piped = run_cli("replay", "--quiet", path, cwd=tmp_path)  # piped: a line of its own too
    assert any(re.fullmatch(verdict, line.strip()) for line in piped.stdout.splitlines()), \
        piped.stdout


def test_pdb_at_a_tests_step_shows_the_tests_stack_not_pytests(tmp_path):
    """The replay runs pytest, whose forty frames stood under the test in every ``where``;
    pdb's stack starts at the recorded stack's outermost frame, the test function."""
    done = _pytest(tmp_path, "--snapstate")
    _, path, _ = _failures(done.stdout)["test_basket.py::test_missing_price"]
    call = _call_of_total(tmp_path, path)
    stopped = run_cli("replay", path, "--to", str(call), "--pdb", cwd=tmp_path,
                      input="where\nc\n", timeout=120)
    shown = stopped.stdout.split("(Pdb)", 1)[1]
    assert "test_missing_price()" in shown and "total()" in shown, stopped.stdout
    assert "_pytest" not in shown and "pluggy" not in shown, shown
    assert "\nsnapstate: replay reached step" in stopped.stdout  # not on "test_basket.py "


UNITTEST_SUITE = textwrap.dedent('''
    import unittest

    def total(items):
        return sum(item["price"] for item in items)

    class BasketTests(unittest.TestCase):
        def test_total(self):
            result = total([{"price": 2}, {"price": 3}])
            self.assertEqual(result, 6)

        @unittest.skip("later")
        def test_later(self):
            pass

        @unittest.expectedFailure
        def test_known_bug(self):
            self.assertEqual(total([]), 1)
''')


def test_a_failing_unittest_tests_run_ends_failed_with_its_exception(tmp_path):
    """unittest catches a TestCase's failure itself, so the recorded block ended normally: the
    kept run said ``finished`` and its replay found nothing to name. Its run ends ``failed``
    with the failure, whose step is where the line points; a skip and an expected failure
    keep nothing."""
    done = _pytest(tmp_path, "--snapstate", suite=UNITTEST_SUITE)
    assert done.returncode == 1, done.stdout + done.stderr
    failures = _failures(done.stdout)
    assert set(failures) == {"test_basket.py::BasketTests::test_total"}, done.stdout
    _, path, step = failures["test_basket.py::BasketTests::test_total"]
    with snap.open_timeline(tmp_path / path) as timeline:
        run = timeline.runs[-1]
        assert run.status == "failed" and run.steps[-1].kind == "exception"
        failing = run.steps[step]
        assert (failing.kind, failing.function) == ("exception", "BasketTests.test_total")
        assert failing.frames[-1].locals["result"].repr == "5"
    replayed = run_cli("replay", path, cwd=tmp_path, timeout=120)
    assert "no divergence; the run ends in AssertionError: 5 != 6, as recorded" in \
        replayed.stdout, replayed.stdout + replayed.stderr


HASHED = '''\
class Key:
    def __init__(self, name):
        self.name = name

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        return self.name == other.name


def order(names):
    return [key.name for key in {Key(name) for name in names}]


def test_set_order():
    assert order(["alpha", "beta", "gamma", "delta", "epsilon"]) == []
'''


def test_a_failing_test_under_xdist_replays_the_order_of_its_string_hashes(tmp_path):
    """pytest starts under a random string-hash secret, which no replay can take again: a
    kept test whose ``__hash__`` hashes a string diverged at its first return (helper-37,
    tomlkit). xdist's workers get a seed chosen by the plugin, hidden from the tests; a
    single process says how to get one."""
    (tmp_path / "test_basket.py").write_text(HASHED)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONHASHSEED", "SNAPSTATE_HIDDEN_HASHSEED")}
    env.update(PYTHONPATH=str(ROOT), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    plugins = ["-p", "snapstate_capture.integrations.pytest_plugin", "-p", "xdist.plugin"]
    for workers in (["-n", "2"], []):
        shutil.rmtree(tmp_path / ".snapstate", ignore_errors=True)
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               *plugins, "--snapstate", *workers, "test_basket.py"],
                              cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=240)
        assert done.returncode == 1, done.stdout + done.stderr
        _, path, _ = _failures(done.stdout)["test_basket.py::test_set_order"]
        hint = "recorded under a random string-hash seed" in done.stdout
        if workers:
            assert not hint, done.stdout
            replayed = run_cli("replay", path, cwd=tmp_path, timeout=120)
            assert "no divergence" in replayed.stdout, replayed.stdout + replayed.stderr
        else:
            assert hint, done.stdout


def test_a_killed_runs_scratch_timelines_are_removed_by_the_next_run(tmp_path):
    """A pytest killed while a test was recorded left its scratch timeline (named after its
    pid, which no later run has): the next run removes those of processes that are gone, and
    leaves a live process's and the kept timelines alone."""
    tests = tmp_path / ".snapstate" / "tests"
    tests.mkdir(parents=True)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    orphans = [f".recording-gw0-{gone}-test_basket.py--test_x.snap" + suffix
               for suffix in ("", "-wal", "-shm")]
    live = f".recording-main-{os.getpid()}-test_basket.py--test_y.snap"
    for name in (*orphans, live, "test_basket.py--test_kept_before.snap"):
        (tests / name).write_bytes(b"x" * 1000)
    done = _pytest(tmp_path, "--snapstate")
    assert done.returncode == 1, done.stdout + done.stderr
    left = sorted(p.name for p in tests.iterdir())
    assert not any(name in left for name in orphans), left
    assert live in left and "test_basket.py--test_kept_before.snap" in left

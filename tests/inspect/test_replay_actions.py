"""The inspector's replay actions (issue 9 point 6), driven with Pilot: "replay check" shows
the outcome; "fork here" → live makes a new branch that appears in the runs tree, selected."""

from __future__ import annotations

import snapstate_capture as snap
from snapstate_capture.trust.keys import generate_key
from snapstate_inspect import keymap
from snapstate_inspect.app import SnapStateApp
from snapstate_inspect.screens.replay import ForkScreen, ReplayOutcomeScreen
from snapstate_inspect.screens.runs import RunsScreen
from tests.e2e.replay_helpers import record_agent, side_lines
from tests.hostile import as_stranger

from .conftest import settle


def _signed_agent(tmp_path):
    generate_key()  # the run is signed with the user's key, so replay trusts it
    return record_agent(tmp_path, rounds=2)


def test_commands_are_registered_with_keys_and_help():
    fork, check = keymap.find("fork_here"), keymap.find("replay_check")
    assert (fork.keys, check.keys) == ("f", "R")
    assert fork.run is not None and check.run is not None


async def test_replay_check_shows_no_divergence(tmp_path):
    path, side, _ = _signed_agent(tmp_path)
    before = side_lines(side)
    with snap.open_timeline(path) as reader:
        app = SnapStateApp(reader)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("R")
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, ReplayOutcomeScreen)
            assert screen.result["status"] == "ok"
            assert "no divergence" in screen.text.plain
            await pilot.press("q")
            await settle(pilot)
            assert not isinstance(app.screen, ReplayOutcomeScreen)
    assert side_lines(side) == before


async def test_fork_here_live_selects_the_new_branch(tmp_path):
    path, side, _ = _signed_agent(tmp_path)
    before = side_lines(side)
    with snap.open_timeline(path) as reader:
        original = reader.runs[-1]
        app = SnapStateApp(reader, step=2)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("f")
            await settle(pilot)
            assert isinstance(app.screen, ForkScreen)
            await pilot.press("l")
            await settle(pilot)
            assert isinstance(app.screen, RunsScreen)
            fork = app.current_run
            assert fork.id != original.id
            assert (fork.parent.run_id, fork.parent.step) == (original.id, 2)
            tree = app.screen.query_one("#runs-tree")
            assert tree.cursor_node.data == fork.id
            assert len(app.runs) == 2
    assert side_lines(side) == before + ["llm question 1", "tool q1"]  # after step 2: live


async def test_untrusted_run_is_refused_with_a_notice(tmp_path):
    with as_stranger(tmp_path):  # someone else's run
        path, _, _ = record_agent(tmp_path, rounds=2)
    with snap.open_timeline(path) as reader:
        app = SnapStateApp(reader)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("R")
            await settle(pilot)
            assert not isinstance(app.screen, ReplayOutcomeScreen)
            assert any("refusing to load" in str(n.message) for n in app._notifications)


async def test_a_waiting_run_is_marked_and_answered_with_a(tmp_path):
    """Issue 17 point 6: the runs tree marks the waiting run with its prompt; ``a`` takes the
    answer (refusing one the schema rejects), the continuation runs, the new branch opens."""
    from snapstate_inspect.screens.answer import AnswerScreen
    from tests.conftest import PROGRAMS, run_python

    generate_key()
    path, side = tmp_path / "agent.snap", tmp_path / "side.txt"
    assert run_python(str(PROGRAMS / "durable_agent.py"), str(path), str(side),
                      cwd=tmp_path).returncode == 75
    assert run_python("-m", "snapstate_inspect", "resume", str(path), "--answer", "yes",
                      cwd=tmp_path).returncode == 75  # now it waits for 'legal' (a boolean)
    with snap.open_timeline(path) as reader:
        waiting = reader.runs[-1]
        app = SnapStateApp(reader)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)
            await pilot.press("r")
            await settle(pilot)
            labels, todo = [], list(app.screen.query_one("#runs-tree").root.children)
            while todo:
                node = todo.pop(0)
                labels.append(str(node.label))
                todo.extend(node.children)
            assert any("⏸ waits for 'legal': Legal ok?" in label for label in labels), labels
            assert any("✓ waited for 'approval', continued as" in label for label in labels)
            assert any("continues " in label and "⏸" in label for label in labels)
            await pilot.press("a")  # on the highlighted (waiting) run, in the runs tree
            await settle(pilot)
            assert isinstance(app.screen, AnswerScreen)
            await pilot.press(*"maybe", "enter")
            await settle(pilot)
            error = str(app.screen.query_one("#answer-error").render())
            assert "is not of type 'boolean'" in error  # refused: still asking
            app.screen.query_one("#answer-input").value = ""
            await pilot.press(*"true", "enter")
            await settle(pilot)
            assert isinstance(app.screen, RunsScreen)
            assert app.current_run is not None and app.current_run.id != waiting.id
            assert app.current_run.parent.run_id == waiting.id
            assert app.current_run.status == "finished"
    assert side_lines(side) == ["draft cats", "draft cats (yes)"]


async def test_the_status_bar_says_whose_signature_lets_payloads_load(tmp_path):
    """Your own run is "signed by you" (a fork loads it without --trust), a stranger's run
    "untrusted (previews only)", a copy of yours changed since "altered" (said on opening,
    not only when a replay is refused): the bar tells which, not whether --trust was
    passed."""
    import shutil

    from snapstate_inspect.widgets.status import StatusBar
    from tests.hostile import connect

    own, _, _ = _signed_agent(tmp_path)
    (tmp_path / "theirs").mkdir()
    with as_stranger(tmp_path):
        theirs, _, _ = record_agent(tmp_path / "theirs", rounds=1)
    altered = shutil.copy(own, tmp_path / "altered.snap")
    conn = connect(altered)
    conn.execute("UPDATE steps SET label = 'edited' WHERE idx = 1")
    conn.commit()
    conn.close()
    for path, expected in ((own, "signed by you"), (theirs, "untrusted (previews only)"),
                           (altered, "altered since it was recorded")):
        with snap.open_timeline(path) as reader:
            app = SnapStateApp(reader)
            async with app.run_test(size=(140, 40)) as pilot:
                await settle(pilot)
                for _ in range(50):  # the signature is checked in a worker
                    text = app.screen.query_one(StatusBar)._text.plain
                    if "checking" not in text:
                        break
                    await pilot.pause(0.05)
                assert expected in text, (path, text)
    with snap.open_timeline(theirs) as reader:  # ``snapstate inspect --trust`` sets app.trust
        app = SnapStateApp(reader)
        app.trust = True
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)
            assert "trusted (--trust)" in app.screen.query_one(StatusBar)._text.plain


async def test_a_refused_fork_says_its_command_whole(isolated_user_config):
    """The sample is signed by another key: ``f`` is refused with what would make it pass,
    ``pip install 'snapstate[crypto]'`` among it. The notification read ``[crypto]`` as a
    markup tag and showed ``pip install 'snapstate'``."""
    from textual.widgets._toast import Toast

    from tests.conftest import ROOT

    generate_key()  # the user has a key: the sample is another's, signed with HMAC
    with snap.open_timeline(ROOT / "sample_snapshots" / "research_agent.snap") as reader:
        app = SnapStateApp(reader)
        async with app.run_test(size=(160, 50), notifications=True) as pilot:
            await settle(pilot)
            await pilot.press("f")
            await settle(pilot)
            await pilot.pause(0.3)
            shown = " ".join(str(toast.render()) for toast in app.query(Toast))
            assert "Cannot fork" in shown and "signed by another key" in shown, shown
            assert "pip install 'snapstate[crypto]'" in shown, shown
            # what makes it pass here comes first: the inspector's own --trust
            remedy = shown.index("snapstate inspect --trust")
            assert remedy < shown.index("signed by another key"), shown
            assert "research_agent.snap" in shown[remedy:remedy + 200], shown

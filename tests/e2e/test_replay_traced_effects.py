"""Traced replays and effects whose own work is traced: replay serves the effect without
running it, so the recorded steps of its body are skipped, whichever frames were traced."""

from __future__ import annotations

import snapstate_capture as snap
from tests.conftest import record_traced_script, run_cli
from tests.e2e.replay_helpers import replay_json

#: A library the effect calls; only it is traced (``--include '*/shop_api.py'``), as with
#: ``--include '*/httpx/*'`` around an ``@snap.effect`` that calls an httpx client.
SHOP_API = '''\
class Client:
    def __init__(self, prices):
        self.prices = prices

    def get(self, item):
        return {"item": item, "price": self._lookup(item)}

    def _lookup(self, item):
        return self.prices[item]
'''

#: The program: untraced, its effect calls the traced library.
SHOP = '''\
import snapstate_capture as snap
from shop_api import Client

client = Client({"tea": 3, "jam": 5})


@snap.effect(name="price")
def price(item):
    return client.get(item)


def main():
    total = 0
    for item in ["tea", "jam"]:
        total += price(item)["price"]
    print(total)


main()
'''


def test_an_effects_traced_library_body_is_skipped_when_its_callers_are_not_traced(tmp_path):
    (tmp_path / "shop_api.py").write_text(SHOP_API)
    (tmp_path / "shop.py").write_text(SHOP)
    path = tmp_path / "shop.snap"
    done = run_cli("record", "--trace", "calls", "--include", "*/shop_api.py", "-o", str(path),
                   "shop.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "8\n"
    result, data = replay_json(path)
    assert data is not None, result.stderr
    assert data["status"] == "ok", data.get("message")


def test_a_stop_inside_an_effects_body_is_refused_at_the_effect(tmp_path):
    """The call of an effect's own function is a recorded step replay never makes (the effect
    is served): stopping or forking there ends at the effect with a way out, instead of
    running the program to its end and saying the step was never reached."""
    (tmp_path / "shop_api.py").write_text(SHOP_API)
    path = record_traced_script(tmp_path, "shop.py", SHOP)
    with snap.open_timeline(path) as timeline:
        steps = timeline.runs[-1].steps
        inside = next(s.index for s in steps if s.kind == "call" and s.function == "price")
        effect = next(s.index for s in steps if s.kind == "effect")
    assert inside < effect
    for mode, verb in (("--pdb", "stop"), ("--live", "fork")):
        result = run_cli("replay", str(path), "--to", str(inside), mode, cwd=tmp_path,
                         input="c\n")
        assert result.returncode == 2, result.stderr
        assert result.stdout == "", result.stdout  # the program did not run on to its end
        assert (f"step {inside} is inside effect 'price' (step {effect}): replay serves the "
                f"effect's recorded result without running its body, so it cannot {verb} "
                f"there; {verb} at the effect (--to {effect})") in result.stderr

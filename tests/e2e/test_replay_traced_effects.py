"""Traced replays and effects whose own work is traced: replay serves the effect without
running it, so the recorded steps of its body are skipped, whichever frames were traced."""

from __future__ import annotations

from tests.conftest import run_cli
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

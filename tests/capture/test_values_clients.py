"""HTTP and model-API clients held by a program are machinery (issue 19: capture costs what
changed): one line with the base URL, no payload, no capture error, nothing captured again at
a step where the line is the same — on the real httpx, requests, aiohttp and openai clients."""

from __future__ import annotations

import asyncio

import aiohttp
import httpx
import openai
import requests

import snapstate_capture as snap
from snapstate_capture.values.clients import url_text

KEY = "sk-" + "Zq3" * 16


class CompanyClient(httpx.Client):
    """A program's own client class, with state of its own: captured as any object is."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.team = "search"


def _agent(steps: int) -> int:
    client = httpx.Client(base_url="https://user:pw@example.invalid:8443/api?key=1")
    session = requests.Session()
    model = openai.OpenAI(api_key=KEY, base_url="http://localhost:9/v1")
    total = 0
    for step in range(steps):
        total += step
        snap.checkpoint("tick")
    for closing in (client, session, model):
        closing.close()
    return total


def _locals(path, step):
    with snap.open_timeline(path) as timeline:
        found = timeline.runs[-1].steps[step]
        return found.errors, {name: value.repr for name, value in
                              found.frames[-1].locals.items()}, found.frames[-1].key


def test_clients_are_one_line_with_their_base_url_and_no_capture_error(snap_path):
    with snap.record(snap_path, name="clients"):
        _agent(3)
    errors, shown, _ = _locals(snap_path, -1)
    assert errors == []
    assert shown["client"] == "<Client base_url=https://example.invalid:8443/api>"
    assert shown["session"] == "<Session>"
    assert shown["model"] == "<OpenAI base_url=http://localhost:9/v1/>"
    text = " ".join(shown.values())
    assert "pw" not in text and "key=1" not in text and KEY not in text


def test_an_unchanged_client_is_not_captured_again(snap_path, captures):
    with snap.record(snap_path, name="clients"):
        _agent(4)
    assert not {"client", "session", "model"} & set(captures)
    # the frame's record is the same bytes at every step but for ``total``/``step``: the
    # clients' refs did not change (their preview blob was stored once)
    with snap.open_timeline(snap_path) as timeline:
        steps = list(timeline.runs[-1].steps)
        refs = [{name: value.preview_key for name, value in step.frames[-1].locals.items()
                 if name in ("client", "model")} for step in steps if step.label == "tick"]
    assert len(refs) == 4 and all(ref == refs[0] for ref in refs)


def test_a_client_class_of_the_programs_own_is_captured_with_its_state(snap_path):
    own = CompanyClient(base_url="https://own.invalid")
    with snap.record(snap_path, name="own"):
        snap.checkpoint("held")
    own.close()
    with snap.open_timeline(snap_path) as timeline:
        preview = timeline.runs[-1].steps[-1].frames[-1].locals["own"].preview
    assert not preview.get("machinery") and "search" in str(dict(preview["children"])[".team"])


def test_base_urls_are_read_from_each_librarys_url_without_credentials():
    assert url_text("https://u:p@host.invalid:1/x?token=2#f") == "https://host.invalid:1/x"
    assert url_text(httpx.URL("http://u:p@h.invalid/y?q=1")) == "http://h.invalid/y"

    async def aiohttp_url() -> str:
        async with aiohttp.ClientSession(base_url="http://u:p@h.invalid:9/z/") as session:
            from snapstate_capture.values.clients import describe
            return describe(session)

    assert asyncio.run(aiohttp_url()) == "base_url=http://h.invalid:9/z/"
    assert url_text(None) == url_text(3) == url_text("not a url") == ""

"""Redaction that keeps what is not secret (issue 20, point 2; rules in docs/security.md).

False positives from real packages — mistune's ``token`` dicts, pydantic-ai's
``profile['may_tokenize_special_tokens_in_content']`` — are shown, while real secrets (under a
secret name, or recognised by their shape under any name) vanish from previews, payloads and
trace chunks.
"""

from __future__ import annotations

import sqlite3

import mistune
import pytest
from pydantic_ai.profiles import ModelProfile

import snapstate_capture as snap
from snapstate_capture.store import chunks
from snapstate_capture.values import secret_shapes

from .values_support import all_blob_bytes, child
from .values_support import read_locals as read_entries


def read_locals(path) -> dict:
    """The previews of the last step's innermost locals."""
    return {name: entry["preview"] for name, entry in read_entries(path).items()}

# Built at run time: the test's own source is stored in the file, so a literal would be found.
RANDOM = "".join(chr(ord("A") + (n * 7919) % 26) for n in range(40))
OPENAI = "sk-proj-" + RANDOM
GITHUB = "ghp_" + RANDOM[:36]
SLACK = "xoxb-" + "4815162342-" + RANDOM[:24]
AWS = "AKIA" + RANDOM[:16]
JWT = "eyJ" + RANDOM[:20] + ".eyJ" + RANDOM[5:25] + "." + RANDOM[:30]
STRIPE = "sk_live_" + RANDOM[:24]
GOOGLE = "AIza" + (RANDOM * 2)[:35]
PAT = "github_pat_" + RANDOM[:32]
PLAIN = "s3cr3t-" + RANDOM[:12]  # no known shape: only its name can give it away
NUMBER = sum(ord(c) * 31 ** i for i, c in enumerate(RANDOM[:6]))
HINT = "pet " + RANDOM[20:30]


def stored_bytes(path) -> list[bytes]:
    """Every blob and every decoded trace chunk of the file."""
    out = all_blob_bytes(path)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name='trace_chunks'").fetchone():
            out.extend(chunks.inflate(data)
                       for (data,) in conn.execute("SELECT data FROM trace_chunks"))
    finally:
        conn.close()
    return out


def assert_absent(path, *secrets: str) -> None:
    stored = stored_bytes(path)
    assert stored
    for secret in secrets:
        assert not any(secret.encode() in blob for blob in stored), f"{secret[:8]}… was stored"


@pytest.mark.parametrize("text", [OPENAI, GITHUB, SLACK, AWS, JWT,
                                  "-----BEGIN RSA PRIVATE KEY-----"])
def test_credential_shapes_are_recognised(text):
    assert secret_shapes.find(f"header: Bearer {text} (rotated)") == [text]


@pytest.mark.parametrize("text", [OPENAI, GITHUB, SLACK, AWS, JWT, STRIPE, GOOGLE, PAT,
                                  "-----BEGIN RSA PRIVATE KEY-----"])
def test_credential_shapes_are_found_in_pickles(text):
    """``in_bytes`` skips the regular expression when no fixed part of a pattern is there:
    every kind is still found, inside the pickle of a list of chat messages."""
    import pickle

    messages = [{"role": "user", "content": "plain words " * 40} for _ in range(8)]
    messages[5]["content"] += f" here: {text} (rotated)"
    assert secret_shapes.in_bytes(pickle.dumps(messages, 5))
    messages[5]["content"] = "plain words"
    assert not secret_shapes.in_bytes(pickle.dumps(messages, 5))


@pytest.mark.parametrize("text", ["scikit-learn is sk-learn", "ghp_", "the token dict",
                                  "may_tokenize_special_tokens_in_content", "AKIA is a word",
                                  "eyJ.eyJ.short", "x" * 300])
def test_ordinary_text_is_not_a_credential(text):
    assert secret_shapes.find(text) == []


def test_containers_under_token_names_are_shown_and_scalars_redacted(snap_path):
    with snap.record(snap_path):
        token = {"type": "text", "raw": "hello", "access_token": PLAIN}  # a parser's token
        tokens = ["def", "f", "(", ")"]
        access_token = PLAIN
        token_number = NUMBER
        may_tokenize = True
        password = {"user": "ada", "hint": HINT}  # unambiguous: redacted whole
        api_key = [PLAIN]
        snap.checkpoint("names")
    shown = read_locals(snap_path)
    assert not shown["token"].get("redacted")
    assert child(shown["token"], "['raw']")["repr"] == "'hello'"
    assert child(shown["token"], "['access_token']").get("redacted")
    assert shown["tokens"]["repr"] == "['def', 'f', '(', ')']"
    assert shown["may_tokenize"]["repr"] == "True"
    for name in ("access_token", "token_number", "password", "api_key"):
        assert shown[name].get("redacted"), name
    assert HINT not in str(shown["password"])
    assert_absent(snap_path, PLAIN, str(NUMBER), HINT)


def test_pydantic_ai_profile_flags_are_shown(snap_path):
    with snap.record(snap_path):
        profile = ModelProfile(may_tokenize_special_tokens_in_content=True,
                               supports_json_schema_output=False)
        snap.checkpoint("profile")
    shown = read_locals(snap_path)["profile"]
    assert not shown.get("redacted")
    assert child(shown, "['may_tokenize_special_tokens_in_content']")["repr"] == "True"
    assert "may_tokenize_special_tokens_in_content" in shown["repr"]


def test_secrets_by_shape_vanish_under_any_name(snap_path):
    class Client:
        def __init__(self):
            self.base_url = "https://api.example"
            self.headers = {"X-Key": OPENAI, "Accept": "json"}

    with snap.record(snap_path):
        note = f"deploy with {GITHUB} tonight"
        keys = [SLACK, AWS, "not a key"]
        client = Client()
        session = {"jwt": JWT, "user": "ada"}
        snap.checkpoint("shapes")
    shown = read_locals(snap_path)
    assert shown["note"]["repr"] == "'deploy with <redacted> tonight'"
    assert child(shown["keys"], "[2]")["repr"] == "'not a key'"
    assert "<redacted>" in child(shown["keys"], "[0]")["repr"]
    assert child(child(shown["client"], ".headers"), "['Accept']")["repr"] == "'json'"
    assert child(shown["session"], "['user']")["repr"] == "'ada'"
    assert_absent(snap_path, OPENAI, GITHUB, SLACK, AWS, JWT)


def test_mistune_token_dicts_are_shown_in_a_traced_parse(tmp_path):
    """Line tracing of mistune itself: its ``token`` dicts (type, raw, attrs…) are shown,
    and a credential in the parsed text still vanishes from the chunks and blobs."""
    path = tmp_path / "md.snap"
    text = f"# Notes\n\nSee [the docs](https://docs.example/?key={OPENAI}) and *this*.\n"
    markdown = mistune.create_markdown(renderer=None)
    with snap.record(path, trace="lines", include=[f"{mistune.__path__[0]}/*.py"]):
        tokens = markdown(text)
    assert tokens[0]["type"] == "heading"
    seen = []
    with snap.open_timeline(path) as timeline:
        for step in timeline.runs[-1].steps:
            frame = step.frames[-1] if step.frames else None
            value = frame.locals.get("token") if frame is not None else None
            if value is not None and value.type_name == "builtins.dict":
                seen.append(value.preview)
    assert seen, "mistune's parser holds a token dict"
    assert not any(p.get("redacted") for p in seen)
    assert any(child(p, "['type']")["repr"] == "'heading'" for p in seen if p.get("children"))
    assert_absent(path, OPENAI)

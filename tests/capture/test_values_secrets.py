"""Secrets are redacted in previews AND payloads: the secret's bytes are in no blob of the file
(issue 3, point 6)."""

from __future__ import annotations

import collections
import dataclasses

import snapstate_capture as snap
from snapstate_capture import Placeholder

from .values_support import all_blob_bytes, child, read_extra, read_locals

# Built at run time: the test's own source is stored in the file, so a literal would be found.
SECRET = "sk-live-" + str(7 * 1_000_003 * 31)


@dataclasses.dataclass
class ClientConfig:
    base_url: str
    api_key: str
    retries: int = 3


class Session:
    def __init__(self):
        self.user = "ada"
        self.headers = {"Authorization": f"Bearer {SECRET}", "Accept": "json"}
        self.client = ClientConfig("https://api.example", SECRET)


Creds = collections.namedtuple("Creds", ["user", "password"])


class Slotted:
    __slots__ = ("name", "token")

    def __init__(self):
        self.name = "svc"
        self.token = SECRET


def assert_secret_absent(path):
    blobs = all_blob_bytes(path)
    assert blobs, "no blobs read"
    needle = SECRET.encode()
    assert not any(needle in blob for blob in blobs), "the secret reached the file"


def test_secret_names_redacted_in_previews_and_payload_bytes(snap_path):
    with snap.record(snap_path):
        api_key = SECRET
        config = {"model": "gpt-x", "api_key": SECRET, "max_tokens": 512,
                  "nested": {"db_password": SECRET, "host": "db"}}
        session = Session()
        creds = Creds("ada", SECRET)
        slotted = Slotted()
        snap.checkpoint("secrets", token=SECRET)
    assert_secret_absent(snap_path)

    got = read_locals(snap_path)
    assert got["api_key"]["preview"]["redacted"] is True
    assert not got["api_key"]["has_payload"]
    assert read_extra(snap_path)["token"]["preview"]["repr"] == "<redacted>"

    config_preview = got["config"]["preview"]
    assert child(config_preview, "['api_key']")["redacted"] is True
    assert child(config_preview, "['max_tokens']")["repr"] == "512"  # a count, not a secret
    assert "<redacted>" in config_preview["repr"]
    assert sorted(config_preview["redacted_parts"]) == [
        "config['api_key']", "config['nested']['db_password']"]
    loaded = got["config"]["value"]
    assert loaded["model"] == "gpt-x" and loaded["max_tokens"] == 512
    assert isinstance(loaded["api_key"], Placeholder)
    assert loaded["api_key"].reason == "redacted: secret name"
    assert loaded["nested"]["host"] == "db"

    session = got["session"]["value"]
    assert session.user == "ada" and session.headers["Accept"] == "json"
    assert isinstance(session.headers["Authorization"], Placeholder)
    assert isinstance(session.client.api_key, Placeholder)
    assert session.client.base_url == "https://api.example"

    assert got["creds"]["value"].user == "ada"
    assert isinstance(got["creds"]["value"].password, Placeholder)
    assert child(got["creds"]["preview"], ".password")["redacted"] is True
    assert got["slotted"]["value"].name == "svc"
    assert isinstance(got["slotted"]["value"].token, Placeholder)


def test_secret_patterns_are_configurable(snap_path):
    options = snap.CaptureOptions(values=snap.ValueOptions(secret_patterns=("pin",)))
    with snap.record(snap_path, options=options):
        # Built at run time so the test's own source blob does not hold it; not digits alone,
        # which the RNG state stored beside it (624 decimal words) holds by chance.
        card = {"pin": f"pin-{4321 * 7}", "api_key": "visible-key"}
        snap.checkpoint()
    got = read_locals(snap_path)["card"]
    assert child(got["preview"], "['pin']")["redacted"] is True
    assert got["value"]["api_key"] == "visible-key"
    assert not any(f"pin-{4321 * 7}".encode() in blob for blob in all_blob_bytes(snap_path))


def test_exempt_names_are_shown():
    options = snap.ValueOptions()
    shown = ["max_tokens", "prompt_tokens", "tokenizer", "completion_tokens", "model"]
    hidden = ["access_token", "api_key_tokens", "OPENAI_API_KEY", "Cookie", "client_secret",
              "Authorization", "db_password", "private_key"]
    assert [n for n in shown if options.is_secret(n)] == []
    assert [n for n in hidden if not options.is_secret(n)] == []


def test_secret_found_by_both_detectors_long_names_and_big_payloads(snap_path):
    long_name = "service_" + "x" * 70 + "_api_key"
    with snap.record(snap_path):
        small = {long_name: SECRET, "n": 1}
        # > 256 KiB of pickle: names are found through the pickler's memo instead
        big = {"blob": bytes(300 * 1024), "inner": {"password": SECRET}}
        snap.checkpoint()
    assert_secret_absent(snap_path)
    got = read_locals(snap_path)
    assert got["small"]["value"]["n"] == 1
    assert isinstance(got["small"]["value"][long_name], Placeholder)
    assert got["big"]["value"]["blob"] == bytes(300 * 1024)
    assert got["big"]["preview"]["redacted_parts"] == ["big['inner']['password']"]


class Settings:
    api_key = SECRET
    region = "eu"


def test_a_secret_inside_a_mappingproxy_is_redacted_and_one_without_is_stored_whole(snap_path):
    """A ``mappingproxy`` (``vars(SomeClass)``) is refused by pickle and written whole by dill,
    which took a secret under a class attribute into the payload and the preview; its mapping
    is walked now, and a proxy without a secret is stored whole as before."""
    with snap.record(snap_path):
        namespace = vars(Settings)
        plain = type(namespace)({"region": "eu", "retries": 3})
        snap.checkpoint()
    assert_secret_absent(snap_path)
    got = read_locals(snap_path)
    assert got["namespace"]["preview"]["redacted_parts"] == ["namespace['api_key']"]
    loaded = got["namespace"]["value"]
    assert loaded["region"] == "eu" and isinstance(loaded["api_key"], Placeholder)
    assert "redacted_parts" not in got["plain"]["preview"]
    assert dict(got["plain"]["value"]) == {"region": "eu", "retries": 3}


def test_a_class_made_at_run_time_holding_a_secret_is_not_copied(snap_path):
    """dill copies a class no import finds with its attributes: one holding a secret is a
    redacted placeholder instead; one without — a method or None under a secret's name is
    none — is copied as before."""
    with snap.record(snap_path):
        settings = type("RuntimeSettings", (), {"api_key": SECRET, "region": "eu"})
        options = type("RuntimeOptions", (), {"region": "eu", "api_key": None,
                                              "password": lambda self: "asked"})
        snap.checkpoint()
    assert_secret_absent(snap_path)
    got = read_locals(snap_path)
    assert got["settings"]["preview"]["placeholder"]["reason"] == "redacted: secret name"
    assert not got["settings"]["has_payload"]
    assert got["options"]["value"].region == "eu"  # a method, or None, under such a name
    assert got["options"]["value"]().password() == "asked"

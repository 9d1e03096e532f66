"""One keyword-only options object for everything capture does (in the manner of stack_data's
``Options``): value bounds, secret names and frame filtering. Immutable; pass a new one to change.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
import os
import re
from functools import lru_cache
from typing import Any

#: Default secret-name patterns (case-insensitive substrings of a variable, key or attribute
#: name): whatever such a name holds is redacted whole, containers included.
DEFAULT_SECRET_PATTERNS: tuple[str, ...] = (
    "api_key", "apikey", "secret", "password", "passwd", "authorization",
    "cookie", "private_key", "credentials",
)

#: Secret-name words that also name ordinary things (a parser's ``token`` dict, a tokenizer's
#: ``tokens`` list): a name with a word ending in one (``token``, ``access_token``,
#: ``csrftoken``, ``refreshToken`` — not ``tokenize`` or ``tokens``) redacts a string, bytes
#: or number it holds; a container under it is shown, its parts judged by their own names and
#: shapes (docs/security.md).
DEFAULT_SECRET_WORDS: tuple[str, ...] = ("token",)

#: Names that contain a secret pattern but are counts, not secrets (``max_tokens``,
#: ``prompt_tokens``, ``tokenizer``): these substrings are removed before matching, so
#: ``max_tokens`` is shown while ``access_token`` and ``api_key_tokens`` stay redacted.
DEFAULT_SECRET_EXEMPT: tuple[str, ...] = ("tokens", "tokenizer", "token_count", "token_usage")


def seconds_from_env(name: str, default: float) -> float:
    """A duration in seconds set by environment variable ``name`` (``SNAPSTATE_LEASE_SECONDS``,
    ``SNAPSTATE_TURN_WAIT``) when it holds a positive number, else ``default`` (unset, empty,
    not a number, zero or negative: ignored)."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


@lru_cache(maxsize=8192)
def _matches(name: str, patterns: tuple[str, ...], exempt: tuple[str, ...]) -> bool:
    lowered = name.lower()
    for word in exempt:
        lowered = lowered.replace(word, "\0")
    return any(p in lowered for p in patterns)


_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


@lru_cache(maxsize=64)
def _exempt_patterns(exempt: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    """The case-insensitive patterns of ``exempt`` substrings, compiled once per tuple (each
    ``re.sub`` with a pattern string looked it up again: most of a new name's ~8 µs)."""
    return tuple(re.compile(re.escape(word), re.IGNORECASE) for word in exempt)


@lru_cache(maxsize=8192)
def _word_matches(name: str, words: tuple[str, ...], exempt: tuple[str, ...]) -> bool:
    """True when a word of ``name`` (split at ``_``, ``-``, ``.``, spaces and camelCase) ends
    with one of ``words``, after removing ``exempt`` substrings (one after another, in order)."""
    lowered = name
    for pattern in _exempt_patterns(exempt):
        lowered = pattern.sub("\0", lowered)
    return any(part.lower().endswith(words) for part in _WORD.findall(lowered))


#: What a name of ``secret_words`` redacts: text, bytes and numbers (not bools).
_SCALAR_SECRETS = (str, bytes, bytearray, int, float, complex)


#: Environment variables that change how a program runs and are safe to store.
DEFAULT_ENTRY_ENV: tuple[str, ...] = ("PYTHONHASHSEED", "PYTHONPATH", "TZ", "LANG", "LC_ALL")


@dataclass(frozen=True, kw_only=True)
class ValueOptions:
    """Bounds on what is captured for one value.

    - ``max_depth``: levels of children kept in a preview (the value itself is level 0).
    - ``max_items``: children kept per container in a preview; the rest become ``more``.
    - ``max_string``: characters kept of a string in a preview.
    - ``max_repr``: characters kept of any ``repr`` (longer ones end in ``…``).
    - ``max_payload_bytes``: payloads larger than this are not stored (a placeholder says so).
    - ``test_load`` / ``test_load_limit``: after serializing, judge whether a payload of at most
      ``test_load_limit`` bytes will load — from its opcodes, never by loading it, which would
      run the program's reconstructors (``values/loadability.py``) — and mark it "not
      loadable" when a class or function it names cannot be found (issues 3 and 22).
    - ``secret_patterns``: names whose values are redacted whole (case-insensitive substring).
    - ``secret_words``: name words that redact only a string, bytes or number (see
      ``DEFAULT_SECRET_WORDS``).
    - ``secret_exempt``: substrings removed from a name before matching (see
      ``DEFAULT_SECRET_EXEMPT``).
    - ``secret_shapes``: also redact credentials recognised by their form under any name
      (``values/secret_shapes.py``: ``sk-…``, ``ghp_…``, ``xoxb-…``, AWS key ids, JWTs, …).
    - ``redact_secrets``: turn redaction off entirely (not recommended).
    - ``slow_repr_seconds``: a user ``__repr__`` that takes longer than this is reported as
      ``<repr failed: SlowRepr: …>`` and never called again for that type in this process
      (see ``values/reprs.py`` for why a slow repr cannot be interrupted safely). Wall time,
      so the default is generous: on a loaded machine an ordinary repr must never cross it,
      or previews would differ from run to run.
    """

    max_depth: int = 3
    max_items: int = 50
    max_string: int = 500
    max_repr: int = 300
    max_payload_bytes: int = 256 * 1024 * 1024
    test_load: bool = True
    test_load_limit: int = 64 * 1024
    secret_patterns: tuple[str, ...] = DEFAULT_SECRET_PATTERNS
    secret_exempt: tuple[str, ...] = DEFAULT_SECRET_EXEMPT
    secret_words: tuple[str, ...] = DEFAULT_SECRET_WORDS
    secret_shapes: bool = True
    redact_secrets: bool = True
    slow_repr_seconds: float = 0.5

    def is_secret(self, name: str) -> bool:
        """Return True when ``name`` may redact what it holds: it matches one of
        ``secret_patterns`` (case-insensitive substring, after removing ``secret_exempt``
        substrings) or of ``secret_words``. Cached per name. Whether a value under it is
        redacted: ``redacts``."""
        if not self.redact_secrets or type(name) is not str:
            return False
        return (_matches(name, self.secret_patterns, self.secret_exempt)
                or _word_matches(name, self.secret_words, self.secret_exempt))

    def redacts(self, name: Any, value: Any) -> bool:
        """True when ``value``, found under ``name``, is redacted: ``name`` matches
        ``secret_patterns`` (any value), or ``secret_words`` and ``value`` is a string, bytes
        or a number (a container is shown; its parts are judged by their own names)."""
        if not self.redact_secrets or type(name) is not str:
            return False
        if _matches(name, self.secret_patterns, self.secret_exempt):
            return True
        return (isinstance(value, _SCALAR_SECRETS) and not isinstance(value, bool)
                and _word_matches(name, self.secret_words, self.secret_exempt))


#: Objects a value may reach before it is stored bounded at traced steps
#: (``CaptureOptions.probe_limit``, ``tracing/big_values.py``, where the figures are).
DEFAULT_PROBE_LIMIT = 64


@dataclass(frozen=True, kw_only=True)
class CaptureOptions:
    """Everything a ``record`` block needs to know besides its path.

    - ``values``: bounds for each captured value (``ValueOptions``).
    - ``library_frames``: also capture frames of the standard library and site-packages
      (off by default: they are noise in an agent's stack, and costly).
    - ``payloads``: store payloads (pickles) at all; previews are always stored.
    - ``entry_env``: environment variables stored with the run's entry and set again on replay
      (names matching a secret pattern are never stored).
    - ``deep_check_chunks``: chunks of a big list/dict of containers re-pickled per capture to
      catch an element edited in place (its identity unchanged); a rotating sweep, so such an
      edit shows within ``ceil(chunks / deep_check_chunks)`` captures of the value, and at
      once in a container of at most that many chunks (16 elements each). None: every chunk
      at every step (exact, at a cost that grows with the container). See docs/storage.md.
    - ``chunked_locals``: in traced runs, capture a frame's big list or dict by chunks
      (``tracing/chunked_locals.py``). Runs recorded so say ``entry["chunked_locals"]``; a
      replay stores those values as its recording did, so its steps match the recording's
      stored values one for one (``replay/traced.py``).
    - ``bound_by_value``: in traced runs, count what dill writes by value — functions made by
      ``exec``, closures, classes pickle cannot name — as what it costs when deciding which
      values are stored bounded (``tracing/big_values.reach``). Runs recorded so say
      ``entry["bounded"]``; a replay of an older run decides as it did.
    - ``probe_limit``: in traced runs, a value that reaches more objects than this is stored
      bounded, one level deep (``tracing/bounded.py``). Runs recorded so say
      ``entry["probe_limit"]``; a replay decides with the recording's limit (300 for runs
      recorded before the limit was stored).
    """

    values: ValueOptions = field(default_factory=ValueOptions)
    library_frames: bool = False
    payloads: bool = True
    entry_env: tuple[str, ...] = DEFAULT_ENTRY_ENV
    deep_check_chunks: int | None = 8
    chunked_locals: bool = True
    bound_by_value: bool = True
    probe_limit: int = DEFAULT_PROBE_LIMIT


#: ``traced_options`` results by the options they were made from (a process makes one per
#: distinct ``CaptureOptions``: ``pytest --snapstate`` records every test with equal ones).
_TRACED: dict[CaptureOptions, CaptureOptions] = {}


def traced_options(options: CaptureOptions) -> CaptureOptions:
    """``options`` for values captured by the tracer: the same but ``values.test_load=False``
    (traced values skip the load-back test of payloads: it doubles the cost of a step)."""
    made = _TRACED.get(options)
    if made is None:
        if len(_TRACED) > 64:
            _TRACED.clear()
        made = _TRACED[options] = replace(options, values=replace(options.values,
                                                                  test_load=False))
    return made


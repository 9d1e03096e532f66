"""Reads every patched source of nondeterminism, much of it through library code, under
``patch_nondeterminism``. Usage: library_sources.py SNAP

``datetime`` and ``date`` are bound by name before the block starts (as frameworks do at
import); ``email`` is standard-library code that reads the clock and draws from ``random``
itself (a multipart boundary).
"""

import datetime as datetime_module
import email.utils
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
import os
import random
import secrets
import sys
import time
import uuid
from datetime import date, datetime

import snapstate_capture as snap


def _boundary() -> str:
    message = MIMEMultipart()
    message.attach(MIMEText("hello"))
    return next(line for line in message.as_string().splitlines() if "=====" in line)


def read_sources() -> dict:
    return {
        "boundary": _boundary(),
        "formatted": email.utils.formatdate(),
        "now": datetime.now(),
        "utc": datetime.now(datetime_module.timezone.utc),
        "today": date.today(),
        "dtoday": datetime.today(),
        "ns": time.time_ns(),
        "perf": time.perf_counter(),
        "clock": time.strftime("%H:%M:%S"),
        "epoch": time.strftime("%Y", time.gmtime(0)),  # no clock read: not an effect
        "uuid1": uuid.uuid1(),
        "uuid4": uuid.uuid4(),
        "token": secrets.token_hex(8),
        "below": secrets.randbelow(1000),
        "sample": random.sample(range(100), 5),
        "noise": os.urandom(4),
    }


with snap.record(sys.argv[1], name="sources", patch_nondeterminism=True):
    values = read_sources()
    snap.checkpoint("read", values=values)
print(sorted(values))

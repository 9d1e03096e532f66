"""Reads nondeterministic sources under ``patch_nondeterminism``: input, clocks, uuid, urandom,
random. With ``leak`` it also reads a source that is not routed (``random.SystemRandom``, the
operating system's generator, which the patch leaves alone), which replay must report as a
divergence. Usage: honest.py SNAP [leak]"""

import os
import random
import sys
import time
import uuid

import snapstate_capture as snap

with snap.record(sys.argv[1], name="honest", patch_nondeterminism=True):
    name = input("name? ")
    stamp = (time.time(), time.monotonic())
    ident = uuid.uuid4().hex
    salt = os.urandom(4)
    dice = [random.randint(1, 6) for _ in range(3)] + [random.random()]
    deck = list(range(8))
    random.shuffle(deck)  # not journaled: the restored generator state makes it repeat
    snap.checkpoint("asked", name=name)
    if sys.argv[2:] == ["leak"]:
        fresh = random.SystemRandom().random()
        snap.checkpoint("leaked")
    print(f"hello {name}")

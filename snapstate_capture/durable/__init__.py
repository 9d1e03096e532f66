"""Durable runs (issue 17): continuing paused and crashed runs, one resumer at a time.

The program side — ``wait_for``, ``sleep_until``, ``patched``, ``Retry`` — lives in
``capture/`` (it runs inside the recorded program); this room is the answering side, on top
of replay: ``resume`` (``snap.resume``, ``snapstate resume``) and ``worker`` (``snapstate
worker``: wake runs that are due, answer runs whose answers arrived). Leases are in the store
(``store/leases.py``) and renewed by the replay child (``replay/lease_keeper.py``).
"""

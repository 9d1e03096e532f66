"""Replay and fork (DESIGN.md "Replay and fork").

A run is replayed by re-executing its entry in a fresh child process
(``python -m snapstate_capture.replay CONFIG``, started by ``snapstate replay``): effects are
served from the run's journal and never executed, random generators are restored, and every
step the program reaches is compared with the recorded one. The first mismatch is a
**divergence**, reported as expected vs actual. At a chosen step the child can stop in pdb or a
console on the live frame, or continue live as a **fork**: a new run in the same file.

Modules: ``session`` (the child's state and the ``record`` hook), ``recorder`` (the replaying
recorder), ``compare`` (step comparison), ``report`` (divergence reports, preview diffs),
``journal`` (reading the effect journal), ``drift`` (code drift before replay), ``fork``
(starting a fork run), ``child`` (the child's main), ``config`` (what the parent tells it).
"""

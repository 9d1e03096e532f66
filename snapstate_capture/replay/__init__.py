"""Replay and fork (DESIGN.md "Replay and fork").

A run is replayed by re-executing its entry in a fresh child process
(``python -m snapstate_capture.replay CONFIG``, started by ``launch.replay`` for
``snapstate replay``): effects are served from the run's journal and never executed, random
generators are restored, and every step the program reaches is compared with the recorded one.
The first mismatch is a **divergence**, reported as expected vs actual. At a chosen step the
child can stop in pdb or a console on the live frame, or continue live as a **fork**: a new run
in the same file.

Modules: ``launch`` (the parent side), ``config`` (what the parent tells the child), ``child``
(the child's main: starting the entry), ``session`` (the child's state, the ``record`` hook,
results), ``recorder`` (the replaying recorder: steps, effects, stop points), ``fastpath`` and
``compare`` (step comparison), ``order`` (which recorded step a live one is compared with),
``traced_compare`` (traced runs, compared per lineage as they are written), ``report``
(divergence reports, preview diffs), ``journal`` (the effect journal), ``drift`` (code drift
before replay), ``fork`` (starting a fork run), ``stops`` (pdb and console), ``dap_stop`` (an
IDE's debugger through debugpy), ``traced`` (traced runs, replayed into a scratch timeline).

Known limits: only the run's own ``record`` block is replayed — other blocks of the program
run unrecorded, their effects for real; steps and effects are matched per lineage
(``capture/lineage.py``, ``order.py``), so the order between threads and tasks is not replayed
— only each one's own order is checked; stop points at traced steps are not offered yet; values
of encrypted runs are compared by loading them (slower).
"""

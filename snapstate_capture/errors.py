"""Exceptions raised by SnapState's reader and writer.

Capture code never raises these into the user's program: they are raised by the reader API
(``open_timeline``) and by explicit operations (``Value.load``), and the ``snapstate`` command
turns each into one line on stderr with exit code 2.
"""

from __future__ import annotations


class SnapStateError(Exception):
    """Base class for every error SnapState raises on purpose."""


class TimelineError(SnapStateError):
    """A timeline file cannot be read: missing, not a timeline, corrupt, or too new.

    The message always names the file and the problem, e.g.
    ``"run.snap: not a SnapState timeline (file is not an SQLite database)"``.
    """

    def __init__(self, path: object, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class WriteFailed(TimelineError):
    """A write to a timeline failed and nothing of that change was stored: ``problem`` says why
    in words ("the disk is full", "the file was deleted while recording", "a write failed (disk
    I/O error)"). The recorder stops the run there, says so once and marks it ``truncated``
    where that can still be written."""


class StoreUnreachable(TimelineError):
    """A store's database cannot be reached now (refused, down, restarting, timed out): worth
    trying again later, unlike the other ``TimelineError``s."""


class StoreRefused(TimelineError):
    """A store's database answered and refused this URL's credentials (a wrong or missing
    password, no ``pg_hba.conf`` entry for this user and host): trying again will not help,
    so a recording is refused before the program starts instead of spooling and waiting."""


class NotFoundError(TimelineError):
    """A run id, step index or blob named by the caller is not in the file."""


class IntegrityError(TimelineError):
    """Stored bytes do not match their hash, or a hash chain is broken (tampering or corruption)."""


class UntrustedPayloadError(SnapStateError):
    """Loading a payload was refused because the file is not trusted.

    Loading a payload unpickles it, which runs code from the file. See DESIGN.md "Trust":
    pass ``trust=True`` (``--trust`` on the command line) only for files you made or trust.
    """


class PayloadLoadError(SnapStateError):
    """A trusted payload was read but could not be turned back into an object."""


def step_out_of_range(step: int, run_id: str, count: int) -> str:
    """The text of a step number a run does not have: ``step 9 out of range (run 1a2b3c4d
    has steps 0-7)``, or ``… has no steps)`` for a run of ``count`` 0."""
    steps = f"steps 0-{count - 1}" if count > 0 else "no steps"
    return f"step {step} out of range (run {run_id[:8]} has {steps})"

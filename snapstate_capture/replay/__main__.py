"""The replay child (see ``child.py``): ``python -m snapstate_capture.replay CONFIG``, or, as
``launch.replay`` starts it, ``python .../snapstate_capture/replay/__main__.py CONFIG`` — as a
script, so that no ``runpy`` frames are beneath the program it replays (a program recorded
under ``snapstate record`` started above four frames of the wrapper's: ``capture/start_depth``).
"""

import os
import sys

if __package__ in (None, ""):  # started as a script: python put this folder first on the path
    sys.path[0] = os.getcwd()  # where ``-m`` puts it; the entry sets its own

from snapstate_capture.replay.child import main  # noqa: E402 - after the path is set

sys.exit(main(sys.argv[1:]))

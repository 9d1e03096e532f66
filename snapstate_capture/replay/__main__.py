"""``python -m snapstate_capture.replay CONFIG``: the replay child (see ``child.py``)."""

import sys

from .child import main

sys.exit(main(sys.argv[1:]))

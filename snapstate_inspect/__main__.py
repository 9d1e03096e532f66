"""``python -m snapstate_inspect`` is the ``snapstate`` command."""

from .cli import main

raise SystemExit(main())

"""snapstate_inspect: the ``snapstate`` command and the Textual inspector.

Reads timeline files only through ``snapstate_capture``'s public reader API.
"""

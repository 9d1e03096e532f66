"""The PostgreSQL engine: a shared store for many recorders and a team (``postgresql://`` URLs).

It implements ``store.engine``'s contract over one database, in its own Postgres schema
(``snapstate``): the same tables as a timeline file, blobs and sources content-addressed across
every run of the store. ``schema`` is the DDL, ``connection`` opens (and on first use creates)
the store, ``engine`` holds the read and write engines. Needs ``psycopg`` (``snapstate[postgres]``),
imported only when a URL is used.
"""

"""Where ``otelhooks serve`` keeps its state: SQLite files (the default) or PostgreSQL.

Nothing is imported here, so that :mod:`otelhooks._store._errors` can be imported by the HTTP
layer without pulling in the event log (which imports the HTTP layer).
"""

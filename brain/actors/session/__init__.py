"""The session actor: one process per open session, the only writer of its journal.

`actor.py` is the actor; the session's decisions are made by the pure core in brain/sessions/,
and the modules here carry them out: the journal (`journal.py`), the Agentloop's thread
(`activation.py`, `inline.py`, `bridge.py`), suspension and the pool.
"""

"""Replaying a past turn against another Agentloop, offline (docs/replay.md).

A team changes its Agentloop and wants to know, before deploying it, what the new module would
have done in turns real sessions already ran. This room runs the new module in a fresh
instance with the payload the turn's activation got, answers each of its guest calls from
what that activation journaled (the machinery a suspended turn resumes with,
brain/sessions/replay.py), and reports call by call where the new loop agrees with the journal
and where it first differs. It reads the journal only: it never sends an effect, never
commits, and never wakes the session's actor.

- turn_history.py: the turn's activation as the journal holds it, read-only.
- run.py: the new module run against it, under a live activation's limits.
- report.py: the report, with its JSON form and its lines for a terminal.
- command.py: `brain replay`; the HTTP route runs it as a subprocess
  (brain/web/resources/replays.py).
"""

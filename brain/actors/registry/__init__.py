"""The registry: one per actor system, the router between web workers and session actors.

`actor.py` is the actor; around it, what it keeps: the pool of warm session actors, the
admission backlog, suspended turns, forks, releases and the hand-over of crashed sessions.
"""

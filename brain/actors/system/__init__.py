"""How the actor system is started and kept: the boot process (`python -m
brain.actors.system.boot`), which starts Thespian's admin and the ActorSupervisor, and the
supervisor, which creates the registry and the shared actors and replaces any that dies. They
compose the wings (registry/, session/, executors/) and what those share at the root of
brain/actors/."""

"""The one warning a test may ignore when it forks the pytest process itself.

Python 3.12+ warns on fork() from a process with more than one thread: only the forking thread
is copied, so a lock another thread held stays locked in the child. The pytest process has one
such thread once any test ran an Agentloop: the process's wasmtime epoch ticker
(brain/agentloop/engine.py), which lives as long as the process. A test that forks the pytest
process on purpose ignores the warning through this filter, and says at the mark why its child
touches nothing the ticker could hold (the ticker only ever holds its own engine's condition).
Brain's own forking processes have no thread at all (tests/e2e/test_fork_threads.py).
"""

FORK_WITH_THREADS = (
    r"ignore:This process \(pid=\d+\) is multi-threaded, use of fork\(\) may lead to deadlocks"
    r" in the child\.:DeprecationWarning"
)

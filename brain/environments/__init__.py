"""Environment execution: the working places Tools and the session run commands and files in.

A pure layer under the executor actor: no actors, no journal, no settings. See
docs/tools-and-environments.md for the ops, their request and result shapes and the path rules.
"""

from brain.environments.deadline import Deadline
from brain.environments.dispatch import (
    HOST_ENVIRONMENTS_MESSAGE,
    OPS,
    open_environment,
    run_environment_op,
)
from brain.environments.errors import EnvironmentOpError
from brain.environments.host import HostEnvironment, HostRunner
from brain.environments.local import LocalEnvironment
from brain.environments.process import child_environment

__all__ = [
    "HOST_ENVIRONMENTS_MESSAGE",
    "OPS",
    "Deadline",
    "EnvironmentOpError",
    "HostEnvironment",
    "HostRunner",
    "LocalEnvironment",
    "child_environment",
    "open_environment",
    "run_environment_op",
]

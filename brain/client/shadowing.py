"""One clear error when a folder named `brain` stands in for Brain's package.

Python looks for `brain` along sys.path, whose first entry is the running script's directory.
A script run from the folder that holds a checkout named `brain` finds that folder there; it
has no `__init__.py` (the package is `brain/brain/`), so Python takes it for a namespace
package (PEP 420). A namespace portion loses to a regular package found on any later path
entry, so an installed wheel, or an editable install that adds the checkout to sys.path (what
Brain's setup makes setuptools do), still wins. An editable install made by setuptools' import
hook does not: that hook sits after the path finder, which has already answered with the empty
namespace package. Brain's submodules still load through the hook, but `brain` itself has no
`__version__`, and the script fails with Python's
`cannot import name '__version__' from 'brain' (unknown location)`. This says what happened.
"""

from __future__ import annotations

import sys

__all__ = ["brain_version", "refuse_a_shadowing_folder"]


def refuse_a_shadowing_folder() -> None:
    """Raise ImportError, naming the folder and what to do, when `brain` is a namespace
    package (no `__file__`) rather than Brain's own."""
    brain = sys.modules.get("brain")
    if brain is None or getattr(brain, "__file__", None) is not None:
        return
    folders = [str(folder) for folder in getattr(brain, "__path__", [])]
    folder = folders[0] if folders else "a folder named brain"
    raise ImportError(
        f"`brain` was imported from the folder {folder}, not from Brain's package: a script "
        f"run from the folder that holds it takes it for an empty namespace package ahead of "
        f"the installed Brain (an editable install made with setuptools' import hook comes "
        f"too late to win). Reinstall with `pip install -e {folder}` (an editable install of "
        f"a checkout puts it on sys.path, where such a folder cannot shadow it), or run the "
        f"script from another directory.", name="brain")


def brain_version() -> str:
    """Brain's `__version__`, once `brain` is known to be Brain's package."""
    refuse_a_shadowing_folder()
    from brain import __version__

    return __version__

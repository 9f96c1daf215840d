"""Python Agentloops, built for the tests by `brain agentloop build` and kept between runs.

The Python loops are not committed as components (each carries an interpreter, ~18 MB);
the suite builds them with componentize-py (a dev dependency, no compiler needed) into
build/python-agentloops/, named by a hash of everything the build reads, and compiles each
once into a serialized artifact beside it: that directory is the compiled-Agentloop cache
every test server reads (BRAIN_AGENTLOOP_CACHE), so no test waits for a compile it is not
about.
"""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

import brain.agentloop.build as build_module
from brain.agentloop.artifacts import why_not_whole
from brain.agentloop.build import GUEST_LIBRARY, build, componentize
from brain.agentloop.components import WIT_PATH, artifact_name
from brain.agentloop.precompile import precompile
from tests.support.server import TEST_AGENTLOOP_CACHE

ROOT = Path(__file__).resolve().parents[2]
PYTHON_LOOPS = ROOT / "agentloops" / "python"
TEST_LOOPS = ROOT / "tests" / "agentloop" / "python_loops"
BUILD_DIR = TEST_AGENTLOOP_CACHE  # the components and their compiled artifacts, side by side


def _build_key(source: Path) -> str:
    digest = hashlib.sha256(metadata.version("componentize-py").encode())
    # The generated entry module is part of every build, so build.py is part of the key.
    for path in [source, WIT_PATH, Path(build_module.__file__),
                 *sorted(GUEST_LIBRARY.rglob("*.py"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def python_guest(name: str) -> Path:
    """The component built from agentloops/python/{name}.py (or a test loop of that name)."""
    source = PYTHON_LOOPS / f"{name}.py"
    if not source.is_file():
        source = TEST_LOOPS / f"{name}.py"
    target = BUILD_DIR / f"{name}-{_build_key(source)}.wasm"
    if not target.is_file():
        build(source, target)
        precompile([str(target)], BUILD_DIR)
    return target


def seed_compiled(data_dir: Path, component: Path) -> None:
    """Have the compiled artifact of `component` in the cache every test server reads
    (TEST_AGENTLOOP_CACHE), so a server on `data_dir` maps it instead of compiling."""
    sha = hashlib.sha256(component.read_bytes()).hexdigest()
    if why_not_whole(BUILD_DIR / artifact_name(sha)) is not None:  # missing, torn, unsummed
        precompile([str(component)], BUILD_DIR)


def other_world_component(world: str) -> Path:
    """A component built without brain_guest against tests/.../worlds/{world}.wit."""
    wit = TEST_LOOPS / "worlds" / f"{world}.wit"
    app = TEST_LOOPS / "worlds" / "other_world_app.py"
    digest = hashlib.sha256(wit.read_bytes() + app.read_bytes()
                            + metadata.version("componentize-py").encode()).hexdigest()[:16]
    target = BUILD_DIR / f"world-{world}-{digest}.wasm"
    if not target.is_file():
        componentize(wit, "agentloop", app.stem, [app.parent], target, wit.name)
    return target

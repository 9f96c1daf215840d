"""`brain chat` runs where only the client is: it imports the standard library, brain.client,
brain/net/sse.py and brain/protocol/records.py (the SDK's dependencies inside Brain, standard
library only themselves), and nothing else."""

from __future__ import annotations

import subprocess
import sys

ALLOWED_BRAIN = ("brain.chat", "brain.client", "brain.net.sse", "brain.protocol.records")
PACKAGES = ("brain", "brain.net", "brain.protocol")  # their __init__ modules: docstrings only


def test_the_chat_imports_only_the_standard_library_and_the_sdk():
    code = ("import sys; before = set(sys.modules); "
            "import brain.chat.command, brain.chat.conversation; "
            "print(' '.join(sorted(set(sys.modules) - before)))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, timeout=60).stdout.split()
    assert "brain.chat.conversation" in out
    top_level = {name.split(".")[0] for name in out}
    third_party = top_level - set(sys.stdlib_module_names) - {"brain"}
    assert third_party == set(), third_party
    outside = [name for name in out if name.startswith("brain") and
               not any(name == allowed or name.startswith(allowed + ".")
                       for allowed in ALLOWED_BRAIN) and name not in PACKAGES]
    assert outside == [], outside

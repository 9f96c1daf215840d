"""A test Agentloop that misbehaves on request: the input text names what to do."""

import json
import random

from brain_guest import Turn, TurnFailed, kv, model, transcript
from brain_guest.raw import call_raw

BALLAST = []


def activate(turn: Turn):
    what = turn.text()
    if what == "spin":
        while True:
            pass
    if what == "alloc":
        BALLAST.extend(bytearray(64 << 20) for _ in range(32))  # 2 GiB
        return "allocated"
    if what == "raise":
        kv.put("before", "committed")
        raise ValueError("the loop gave up")
    if what == "fail":
        raise TurnFailed("my_code", "the loop chose to fail")
    if what == "malformed":
        return [call_raw([1, 2]), call_raw({"no": "op"}), call_raw({"op": "no.such.op"})]
    if what == "clock":
        import time

        return time.time()
    if what == "import":
        import csv  # noqa: F401 - not imported when the loop was built

        return "imported"
    if what == "print":
        print("hello from the guest")
        return "printed"
    if what == "random":
        return random.random()
    if what == "model":
        return model.call([turn.user_message()]).text
    if what == "edit":  # an earlier message changed in place must reach Brain changed
        messages = transcript.read().messages
        messages[0]["content"][0]["text"] = "edited"
        messages.append(turn.user_message())
        transcript.set(messages)
        return len(messages)
    if what == "list":  # a plain list, appended to: sent as Brain's text plus the new part
        messages = transcript.read().messages
        messages.append(turn.user_message())
        transcript.set(messages)
        messages.append(model.call(messages).message)
        transcript.set(messages)
        return len(messages)
    if what == "kv":
        return kv.read("before")
    if what == "unserializable":
        return {1, 2}
    return json.dumps({"unknown": what})

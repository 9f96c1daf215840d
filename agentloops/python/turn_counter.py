"""Example Agentloop: counts turns in kv, asks the model once without tools, and answers
"#<turn>: <model text>" (as agentloops/examples/turn_counter.c)."""

from brain_guest import Turn, TurnFailed, kv, model


def activate(turn: Turn) -> str:
    if not isinstance(turn.input, str):
        raise TurnFailed("invalid_request", "this loop takes text input")
    count = kv.read("turns", 0)  # globals die with the instance: the count lives in kv
    count = (count if isinstance(count, int) else 0) + 1
    kv.put("turns", count)
    reply = model.call([turn.user_message()], tools=[])
    return f"#{count}: {reply.text}"

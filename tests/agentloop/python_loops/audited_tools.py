"""A test Agentloop: the default policy, changed to note in kv which Tools the model asked for
before running them. Replayed against a session the default loop served, it diverges at that
`kv.put` (tests/e2e/test_replay.py)."""

from brain_guest import Turn, kv, model, tools, transcript


def activate(turn: Turn) -> str:
    conversation = transcript.read()
    conversation.append(turn.user_message())
    transcript.set(conversation)
    while True:
        reply = model.call(conversation)
        conversation.append(reply.message)
        transcript.set(conversation)
        calls = reply.tool_calls
        if not calls:
            return reply.text
        kv.put("asked_tools", [c.get("name") for c in calls])
        conversation.append(tools.results_message(calls, tools.call(calls)))
        transcript.set(conversation)

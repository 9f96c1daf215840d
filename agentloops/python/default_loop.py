"""The default Agentloop in Python: the same policy as agentloops/default/loop.c.

Save the user's message; ask the model with the session's tools; while it asks for tools, run
them all, save their results and ask again; complete with the model's text. Every change to the
transcript is saved before the next model call, so a turn that fails part way keeps the
conversation up to that point. A guest call that fails fails the turn with its code.
"""

from brain_guest import Turn, model, tools, transcript


def activate(turn: Turn) -> str:
    messages = transcript.read().messages
    messages.append(turn.user_message())
    transcript.set(messages)
    while True:
        reply = model.call(messages)
        messages.append(reply.message)
        transcript.set(messages)
        calls = reply.tool_calls
        if not calls:
            return reply.text
        messages.append(tools.results_message(calls, tools.call(calls)))
        transcript.set(messages)

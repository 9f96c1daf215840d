"""The default Agentloop in Python: the same policy as agentloops/default/loop.c.

Save the user's message; ask the model with the session's tools; while it asks for tools, run
them all, save their results and ask again; complete with the model's text. Every change to the
transcript is saved before the next model call, so a turn that fails part way keeps the
conversation up to that point. A guest call that fails fails the turn with its code.
"""

from brain_guest import Turn, model, tools, transcript


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
        conversation.append(tools.results_message(calls, tools.call(calls)))
        transcript.set(conversation)

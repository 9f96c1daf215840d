"""A test Agentloop: the default policy, offering the model only the session's MCP tools
(`server.tool`), chosen from `tools.definitions()`; it notes in kv which it offered."""

from brain_guest import Turn, kv, model, tools, transcript


def activate(turn: Turn) -> str:
    offered = [t["name"] for t in tools.definitions() if "." in t["name"]]
    kv.put("offered", offered)
    conversation = transcript.read()
    conversation.append(turn.user_message())
    transcript.set(conversation)
    while True:
        reply = model.call(conversation, tools=offered)
        conversation.append(reply.message)
        transcript.set(conversation)
        calls = reply.tool_calls
        if not calls:
            return reply.text
        conversation.append(tools.results_message(calls, tools.call(calls)))
        transcript.set(conversation)

"""Brain's vocabulary: the messages that cross an actor boundary (commands, effects, replies)
and the journal's record kinds. The session core, the actors, the web tier, the replayer,
metrics, tracing and the chat renderer all speak it; it imports nothing of theirs."""

"""The scripted model both tracing tests drive: one tool call (the builtin `echo`), then text,
so a single turn crosses every kind of span and trace line (model call, Tool call, commits)."""

TOOLUSER = """
[models.tooluser]
provider = "scripted"
script = [
  { tool_calls = [ { name = "echo", input = { a = 1 } } ] },
  { text = "done" },
]
"""

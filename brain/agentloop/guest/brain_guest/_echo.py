"""Send the transcript back as Brain sent it: only what the loop added is new JSON.

A loop reads the transcript, appends to it and hands the whole conversation back
(`transcript.set`, `model.call`) several times a turn. Brain remembers the JSON text of the
messages array it last handed over or was handed, and decodes only what follows when a request
starts with `{"op":OP,"messages":` and exactly that text; a long conversation then costs a turn
its new messages, not its whole history (and a model call can pass the text on). A Python
guest pays for every object it decodes (each fresh instance starts cold), so the same holds
here: a `Transcript` is decoded only when the loop looks at its messages.

Two ways to hand a conversation back, both exact:
- the `Transcript` that `transcript.read()` returned, grown with `append`: its text is Brain's
  text plus the appended messages, nothing to check;
- any list: its start is compared with a pristine decoded copy of Brain's text (a message edited
  in place differs, and the list is sent whole).
Whatever this module believes, Brain checks the text itself, so a mismatch only costs speed.
"""

from __future__ import annotations

import json
from typing import Any

_KEY = '{"messages":'


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class Echo:
    """What Brain holds as the text of this activation's messages array."""

    def __init__(self) -> None:
        self.text = ""  # "[m1,...,mk" without its closing bracket; "" when nothing is known
        self._pristine: list[Any] | None = []  # decoded from `text` when a list needs it
        self.learned_whole = False

    def pristine(self) -> list[Any]:
        if self._pristine is None:
            self._pristine = json.loads(self.text + "]")
        return self._pristine

    def read_answer(self, answer: str) -> tuple[str, dict[str, Any]]:
        """A `transcript.read` answer as (its messages' array text, the rest of the result);
        Brain now holds that text."""
        if answer.startswith(_KEY + "[") and not answer.startswith(_KEY + "[]"):
            cut = answer.rfind(',"through_sequence":')
            if cut > 0 and answer[cut - 1] == "]":
                try:
                    rest = json.loads("{" + answer[cut + 1:])
                except ValueError:
                    rest = None
                if isinstance(rest, dict):
                    self.text, self._pristine = answer[len(_KEY):cut - 1], None
                    return self.text + "]", rest
        result = json.loads(answer)  # an error, an empty transcript, or another shape
        messages = result.pop("messages", None) if isinstance(result, dict) else None
        return dumps(messages or []), result if isinstance(result, dict) else {}

    def send_grown(self, op: str, added: list[Any], extra: dict[str, Any]) -> str:
        """The request for Brain's text followed by `added` (the caller knows they match)."""
        if added:
            items = dumps(added)[1:-1]
            self.text += "," + items
            if self._pristine is not None:
                self._pristine.extend(json.loads("[" + items + "]"))
        return self._request(op, self.text + "]", extra)

    def send_list(self, op: str, messages: list[Any], extra: dict[str, Any]) -> str:
        """The request for a plain list, echoing Brain's text when the list starts with it."""
        if self.text:
            pristine = self.pristine()
            known = len(pristine)
            if len(messages) >= known and messages[:known] == pristine:
                return self.send_grown(op, messages[known:], extra)
        return self.send_whole(op, dumps(messages), extra)

    def send_whole(self, op: str, array: str, extra: dict[str, Any]) -> str:
        """The request for a whole array's text (Brain decodes all of it)."""
        if not self.text and not self.learned_whole:
            # Brain learns the first whole array it decodes while it knows none (once).
            self.learned_whole = True
            if array != "[]":
                self.text, self._pristine = array[:-1], None
        return self._request(op, array, extra)

    @staticmethod
    def _request(op: str, array: str, extra: dict[str, Any]) -> str:
        tail = "}" if not extra else "," + dumps(extra)[1:]
        return f'{{"op":"{op}","messages":' + array + tail


echo = Echo()

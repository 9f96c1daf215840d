"""A component app for the worlds in this folder, built without brain_guest."""

import wit_world


class WitWorld(wit_world.WitWorld):
    def run(self, payload: str) -> str:
        return payload

    def activate(self, payload: str) -> str:
        return '{"status": "completed", "output": "old world"}'

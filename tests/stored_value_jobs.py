"""A tool that writes a nested value to the network memory (importable by workers)."""

from robotlab.tools import Tool


class RememberProfile(Tool):
    """Store a customer's profile in memory."""

    def execute(self, customer: str) -> str:
        self.memory.set("profile", {"name": customer, "tags": ["new", "vip"], "seen": {"web"}})
        return "stored"

"""Quickstart: a robot with a tool, a hook and a budget, then a two-task network. Offline.

Run: python examples/quickstart.py
"""

import robotlab
from robotlab.llm import ScriptedModel, call


@robotlab.tool
def lookup_order(order_id: str) -> str:
    """Look up an order's status."""
    return {"42": "shipped"}.get(order_id, "unknown order")


class Timing(robotlab.Hook):
    @classmethod
    def after_tool_call(cls, ctx):
        print(f"  hook: {ctx.tool_name}({ctx.tool_args}) -> {ctx.tool_result!r}")


def main() -> None:
    robotlab.on(Timing)
    support = robotlab.build(
        name="support",
        model=ScriptedModel([call("lookup_order", order_id="42"), "Order 42 has shipped."]),
        system_prompt="You answer questions about orders.",
        local_tools=[lookup_order],
        token_budget=2_000,
    )
    result = support.run("Where is order 42?", tools="inherit")
    print("robot:", result.last_text_content, f"({result.total_tokens} tokens)")

    network = robotlab.create_network(name="pipeline")
    network.task("draft", robotlab.build(name="drafter", model=ScriptedModel(["Order 42 shipped."])))
    network.task(
        "polish",
        robotlab.build(name="editor", model=ScriptedModel(["Good news: order 42 is on its way!"])),
        depends_on=["draft"],
    )
    outcome = network.run("Tell the customer about order 42")
    print("network:", outcome.value, "| tasks:", {n: o.status for n, o in outcome.tasks.items()})


if __name__ == "__main__":
    main()

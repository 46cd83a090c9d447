"""A model that calls a tool its robot has but the run did not offer is told how to offer it."""

import robotlab
from robotlab.llm import ScriptedModel, call


@robotlab.tool
def lookup_order(order_id: str) -> str:
    """Look up an order."""
    return "shipped"


NOT_OFFERED = ("Tool 'lookup_order' is attached to robot 'support' but this run did not offer it: tools are "
               "opt-in per run, so pass tools=\"inherit\" (every attached tool) or a list naming it, e.g. "
               "tools=['lookup_order'], to run() or network.task()")


def support(*replies):
    return robotlab.build(name="support", model=ScriptedModel([*replies, "done"]), local_tools=[lookup_order])


def test_an_attached_tool_the_run_did_not_offer_names_tools_inherit():
    robot = support(call("lookup_order", order_id="42"))
    result = robot.run("Where is 42?")  # tools="none" by default
    (record,) = result.tool_calls
    assert record.error == NOT_OFFERED
    assert robot.messages[-2]["content"] == f"Error (lookup_order): {NOT_OFFERED}"  # what the model was told


def test_a_network_task_without_tools_says_the_same():
    net = robotlab.create_network(name="n")
    net.task("t", support(call("lookup_order", order_id="42")))
    assert net.run("go")["t"].result.tool_calls[0].error == NOT_OFFERED


def test_a_tool_the_robot_does_not_have_keeps_the_not_found_error():
    result = support(call("refund", order_id="42")).run("Refund 42", tools="inherit")
    assert result.tool_calls[0].error == "Tool 'refund' not found. Available tools: lookup_order"

"""Router networks: a robot that classifies and routes, a callable router that loops, and the loop guard. Offline.

Run: python examples/router_demo.py
"""

import robotlab
from robotlab.llm import ScriptedModel


def classify(messages, tools):
    """The classifier's offline model: name the robot that should answer."""
    return "billing" if "charged" in messages[-1]["content"] else "technical"


def support_desk() -> robotlab.Network:
    classifier = robotlab.build(name="classifier", model=ScriptedModel(classify),
                                system_prompt="Answer with one word: billing or technical.")
    net = robotlab.create_network(name="support", router=classifier)  # a robot as the router
    net.task("billing", robotlab.build(name="billing", model=ScriptedModel(lambda m, t: "A refund is on its way.")))
    net.task("technical", robotlab.build(name="technical", model=ScriptedModel(lambda m, t: "Try a restart.")))
    return net


def review_loop(args: robotlab.RouterArgs):
    """Write, review, write again until the critic approves (or max_steps stops a critic that never does)."""
    if args.call_count == 0:
        return "draft"
    if args.last_result.robot_name == "writer":
        return "review"
    return None if "approved" in (args.last_result.last_text_content or "") else "draft"


def editing(critic_replies: list[str], max_steps: int) -> robotlab.Network:
    net = robotlab.create_network(name="editing", router=review_loop, max_steps=max_steps)
    net.task("draft", robotlab.build(name="writer", model=ScriptedModel(["v1", "v2", "v3", "v4"])))
    net.task("review", robotlab.build(name="critic", model=ScriptedModel(critic_replies)))
    return net


def main() -> None:
    desk = support_desk()
    for question in ("I was charged twice", "My screen is blank"):
        result = desk.run(question)
        print(f"{question!r}: steps {list(result.tasks)} -> {result.value}")

    result = editing(["shorter, please", "approved"], max_steps=10).run("Write a slogan")
    print("editing steps:", list(result.tasks), "->", result["draft#2"].result.last_text_content)

    try:
        editing(["no", "no", "no"], max_steps=4).run("Write a slogan")
    except robotlab.RouterLoopError as exc:
        print("loop guard:", exc)
        print("  steps that ran:", list(exc.network_result.tasks))

    lost = robotlab.create_network(name="support", router=lambda args: "sales")
    lost.task("billing", robotlab.build(name="billing", model=ScriptedModel(["-"])))
    try:
        lost.run("hi")
    except robotlab.RouterError as exc:
        print("unknown robot:", exc)


if __name__ == "__main__":
    main()

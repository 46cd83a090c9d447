"""Robots messaging each other during a network run, and delegating work. Offline.

A reporter sends tips to an editor over the network's bus while both run at
once; the editor waits for them, then delegates a fact check to a checker
robot on another thread. A network-level hook sees every run, the delegate's
included.

Run: python examples/messaging_demo.py
"""

import threading

import robotlab
from robotlab.llm import ScriptedModel, call


class SendTips(robotlab.Tool):
    """Send each tip to the editor, one message per tip."""

    def execute(self, tips: str) -> str:
        for tip in tips.split(";"):
            self.robot.send_message(to="editor", content=tip.strip())
        return "tips sent"


class ReadTips(robotlab.Tool):
    """Wait for n tips and return them."""

    def execute(self, n: int) -> str:
        tips = [self.robot.receive(timeout=10) for _ in range(n)]
        for tip in tips:
            print(f"  editor got message #{tip.id} from {tip.sender}: {tip.content!r}")
        return "; ".join(tip.content for tip in tips)


class FactCheck(robotlab.Tool):
    """Hand the claim to the checker robot and wait for its verdict."""

    checker: robotlab.Robot

    def execute(self, claim: str) -> str:
        future = self.robot.delegate(type(self).checker, claim, async_=True)
        return future.result(timeout=10).last_text_content


class WhoRuns(robotlab.Hook):
    @classmethod
    def before_run(cls, ctx):
        print(f"  network hook: {ctx.robot.name} runs in {ctx.network.name!r} "
              f"on thread {threading.current_thread().name}")


def main() -> None:
    FactCheck.checker = robotlab.build(name="checker", model=ScriptedModel(["Verified: the bridge opens Monday."]))
    reporter = robotlab.build(
        name="reporter",
        model=ScriptedModel([call("send_tips", tips="bridge opens Monday; mayor to attend"), "Tips filed."]),
        local_tools=[SendTips],
    )
    editor = robotlab.build(
        name="editor",
        model=ScriptedModel([
            call("read_tips", n=2),
            call("fact_check", claim="The bridge opens Monday."),
            "Story approved: the bridge opens Monday, the mayor attends.",
        ]),
        local_tools=[ReadTips, FactCheck],
    )
    net = robotlab.create_network(name="newsroom")
    net.on(WhoRuns)
    net.task("report", reporter, tools="inherit")
    net.task("edit", editor, tools="inherit")  # runs at the same time as "report": it waits for the tips
    result = net.run("Cover the bridge opening.")
    result.raise_for_errors()
    verdict = result["edit"].result.tool_calls[1].result
    print("fact check:", verdict)
    print("final:", result.value)


if __name__ == "__main__":
    main()

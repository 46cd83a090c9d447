"""Hooks firing around a run at three of the four levels (global, robot, per run; a network's are
shown in docs/hooks.md), around nesting, per-handler local state. Offline.

Run: python examples/hooks_demo.py
"""

import time

import robotlab
from robotlab.llm import EchoModel


class Timer(robotlab.Hook):
    @classmethod
    def around_run(cls, ctx, block):
        started = time.perf_counter()
        try:
            return block()
        finally:
            ctx.local.ms = round((time.perf_counter() - started) * 1000, 2)


class Tag(robotlab.Hook):
    @classmethod
    def before_run(cls, ctx):
        print(f"  {ctx.local.level}: before_run request={ctx.request!r}")


def main() -> None:
    robotlab.on(Tag, context={"level": "global"})
    robot = robotlab.build(name="echo", model=EchoModel())
    robot.on(Timer)
    result = robot.run("hello hooks", hooks=[Tag])  # Tag again, per run: same namespace, same state
    print("answer:", result.last_text_content)
    print("hook metadata:", result.hook_metadata)


if __name__ == "__main__":
    main()

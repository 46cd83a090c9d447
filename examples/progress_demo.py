"""Live progress of a network run: ``network.run(message, progress=...)``.

Offline (scripted models). The three checks each call a 0.3 s tool and run at
once. The progress lines go to stdout here (``progress=sys.stdout``) so that
any shell shows them; ``progress=True`` prints them on stderr, and on a
terminal with rich installed (``robotlab[rich]``) draws a live table instead.
"""

import sys
import time

import robotlab
from robotlab.llm import ScriptedModel, call


@robotlab.tool
def check(item: str) -> str:
    """Check one item (a 0.3 s call to a slow service)."""
    time.sleep(0.3)
    return f"{item}: ok"


net = robotlab.create_network(name="fan_out")
net.task("plan", robotlab.build(name="planner", model=ScriptedModel(["check a, b and c"])))
for name in ("a", "b", "c"):
    checker = robotlab.build(name=f"checker_{name}", model=ScriptedModel([call("check", item=name), f"{name} ok"]),
                             local_tools=[check])
    net.task(f"check_{name}", checker, depends_on=["plan"], tools="inherit")
net.task("report", robotlab.build(name="reporter", model=ScriptedModel(["all checked"])),
         depends_on=["check_a", "check_b", "check_c"])

result = net.run("Check everything", progress=sys.stdout)
print(f"result: {result.value!r} in {result.duration:.1f}s")

"""Import weight and what worker-side modules may import."""

import os
import subprocess
import sys
import textwrap

import pytest

WORKER_SIDE = ("robotlab.errors", "robotlab.extensions", "robotlab.hooks", "robotlab.tools")
HEAVY = ("pydantic", "pydantic_core", "msgspec", "litellm")


def run_python(code: str) -> str:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def test_import_robotlab_does_not_import_litellm_or_pydantic():
    out = run_python(
        """
        import sys, robotlab
        print(sorted(m for m in ("litellm", "pydantic", "msgspec") if m in sys.modules))
        """
    )
    assert out == "[]"


def test_import_llm_does_not_import_litellm():
    assert run_python("import sys, robotlab.llm; print('litellm' in sys.modules)") == "False"


@pytest.mark.parametrize("module", WORKER_SIDE)
def test_worker_side_modules_import_nothing_heavy(module):
    out = run_python(f"import sys, {module}; print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    assert out == "[]"


def _interpreters():
    if sys.version_info >= (3, 14):
        from concurrent import interpreters
        return interpreters
    if sys.version_info >= (3, 13):
        try:
            from interpreters_backport import interpreters
        except ImportError:
            return None
        return interpreters
    return None


def test_worker_side_modules_load_in_a_real_subinterpreter():
    interpreters = _interpreters()
    if interpreters is None:
        reason = "subinterpreters need CPython 3.13+ with robotlab[subinterpreters]"
        if os.environ.get("ROBOTLAB_REQUIRE_SUBINTERPRETERS") == "1":
            pytest.fail(f"ROBOTLAB_REQUIRE_SUBINTERPRETERS=1 but {reason} (running {sys.version.split()[0]})")
        pytest.skip(reason)
    interp = interpreters.create()
    try:
        interp.exec(f"import sys; sys.path[:] = {sys.path!r}")
        for module in WORKER_SIDE:
            interp.exec(f"import {module}")
        from robotlab.parallel import boundary

        if boundary._freeze_plain_c is not None:  # the C fast path supports isolated interpreters
            interp.exec("import robotlab.parallel._freeze as c; assert c.freeze_plain([1], dict, set(), None) == (1,)")
        interp.exec(
            textwrap.dedent(
                """
                from robotlab.hooks import Hook, HookRegistry, Hooks, RunHookContext
                from robotlab.errors import ToolLoopError
                class Up(Hook):
                    @classmethod
                    def around_run(cls, ctx, block):
                        return block().upper()
                r = HookRegistry(); r.on(Up)
                assert Hooks.run("run", RunHookContext(), [r], None, lambda: "ok") == "OK"
                assert "pydantic" not in sys.modules and "litellm" not in sys.modules
                assert str(ToolLoopError.for_limit(1)).startswith("Circuit breaker")
                """
            )
        )
    finally:
        interp.close()

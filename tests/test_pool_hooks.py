"""tool_call hooks travel to workers by import path; their ctx.metadata comes back."""

from __future__ import annotations

import os

import pytest

import robotlab
from robotlab.errors import RactorBoundaryError, ToolError
from robotlab.hooks import Hook
from robotlab.parallel import WorkerPool
from tests import hook_jobs


def test_global_tool_call_hooks_fire_in_the_worker_and_their_metadata_returns():
    robotlab.on(hook_jobs.PidTracer)
    with WorkerPool(size=1) as pool:
        future = pool.submit_tool(hook_jobs.Fail, {"reason": "boom"}, errors="text")
        assert future.result(30) == "Error (fail): boom"
        assert future.hook_metadata["pid_tracer"]["tool"] == "fail"
        assert future.hook_metadata["pid_tracer"]["pid"] != os.getpid()
        failing = pool.submit_tool(hook_jobs.Fail, {"reason": "boom"})
        with pytest.raises(ToolError, match="failed in worker: boom"):
            failing.result(30)
        assert failing.hook_metadata["pid_tracer"]["tool"] == "fail"
        quiet = pool.submit_tool(hook_jobs.Fail, {"reason": "x"}, hooks=None, errors="text")
        assert quiet.result(30) == "Error (fail): x" and quiet.hook_metadata is None


def test_a_hook_workers_cannot_import_is_refused_before_dispatch():
    class LocalHook(Hook):
        @classmethod
        def before_tool_call(cls, ctx):
            pass

    robotlab.on(LocalHook)
    with WorkerPool(size=1) as pool:
        with pytest.raises(RactorBoundaryError, match=r"Hook .*LocalHook cannot be registered in a worker"):
            pool.submit_tool(hook_jobs.Fail, {"reason": "x"})

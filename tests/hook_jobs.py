"""A hook and a tool that workers import (for tests/test_pool_hooks.py)."""

from __future__ import annotations

import os

from robotlab.hooks import Hook
from robotlab.tools import Tool


class PidTracer(Hook):
    @classmethod
    def before_tool_call(cls, ctx):
        ctx.local.pid = os.getpid()
        ctx.local.tool = ctx.tool_name


class Fail(Tool):
    def execute(self, reason: str) -> str:
        raise ValueError(reason)

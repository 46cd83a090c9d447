"""Which worker takes which job, and when: WorkerPool's scheduling policy.

Pure: given the queue and what each worker holds, it decides; it starts no
worker, sends nothing and reads no clock of its own (callers pass ``now``),
so it is tested without workers (``tests/test_scheduling.py``). The
supervisor (``supervisor.py``) carries its decisions out.

A worker is anything with ``ready``, ``jobs`` (the jobs in its pipe, the
first one running) and ``jobs_done``; a job anything with ``profile`` (what
its run time is learned under), ``timeout`` and ``started`` (monotonic, once
it is at the front of its worker's pipe).

Example:
    >>> from types import SimpleNamespace as Job
    >>> policy = SchedulingPolicy()
    >>> policy.learn(("call", "math:sqrt"), 0.0001)        # a short job, by its run time
    >>> worker = Job(ready=True, jobs_done=0, jobs=[Job(profile=("call", "math:sqrt"), timeout=None, started=0.0)])
    >>> policy.can_take(worker, Job(profile=("call", "math:sqrt"), timeout=None, started=None))
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["HANDOVER_LEAD", "PIPELINE", "SHORT_JOB", "SchedulingPolicy"]

# Jobs in flight per worker. Jobs whose profile has taken less than SHORT_JOB on average
# so far wait in the pipe of a busy worker, up to PIPELINE of them, so a stream of tiny
# jobs never leaves a worker idle for a round trip through the parent. Any other job
# (slow, or not yet measured) goes only to an idle worker: it never waits behind another
# job while a worker is free, and jobs that wait for each other both run (the one
# exception, for jobs of consistent length, is HANDOVER_LEAD below).
PIPELINE = 8
SHORT_JOB = 0.001  # seconds
# A queued job is handed to a busy worker when that worker's job is expected to end within
# this time, so the worker finds it waiting instead of idling for a round trip through the
# parent (a wake-up on each side, 0.1-0.5 ms on a VM). Only when jobs of the running job's
# profile take consistent times (see hand_over_at): one that overruns its estimate holds up
# the job behind it, as ProcessPoolExecutor's one-ahead queue always may.
HANDOVER_LEAD = 0.002  # seconds


class SchedulingPolicy:
    """Run times learned per job profile, and the decisions taken from them.

    ``max_tasks``: a worker takes at most this many jobs in all (``max_tasks_per_child``).
    ``handover_lead``: see :data:`HANDOVER_LEAD` (the default).
    """

    def __init__(self, max_tasks: int | None = None, handover_lead: float | None = None) -> None:
        self.max_tasks = max_tasks
        self.handover_lead = HANDOVER_LEAD if handover_lead is None else handover_lead
        # Moving averages of run time and of its deviation from that average, by job profile.
        self._durations: dict[Any, tuple[float, float]] = {}
        self._short: set[Any] = set()  # the profiles whose average is under SHORT_JOB

    def learn(self, profile: Any, seconds: float) -> None:
        """A job of *profile* ran for *seconds* (in its worker)."""
        known = self._durations.get(profile)
        if known is None:
            average, deviation = seconds, seconds / 2  # one sample says little about the spread
        else:
            average, deviation = known
            deviation = 0.8 * deviation + 0.2 * abs(seconds - average)
            average = 0.8 * average + 0.2 * seconds
        self._durations[profile] = (average, deviation)
        if average < SHORT_JOB:
            self._short.add(profile)
        else:
            self._short.discard(profile)

    def can_take(self, worker: Any, job: Any, *, hand_over: bool = False) -> bool:
        """Whether *worker* may take *job* now (``hand_over``: behind a job about to end)."""
        queued = len(worker.jobs)
        if not worker.ready:
            return False
        if queued:
            if job.timeout is not None:
                return False  # its clock must start when it starts: only an idle worker takes it
            if not (hand_over or self._may_wait_behind(worker, job)):
                return False
        return self.max_tasks is None or worker.jobs_done + queued < self.max_tasks

    def _may_wait_behind(self, worker: Any, job: Any) -> bool:
        """Whether *job* may wait in *worker*'s pipe behind the jobs already there (see PIPELINE)."""
        short = self._short
        return (len(worker.jobs) < PIPELINE and job.profile in short
                and all(queued.profile in short for queued in worker.jobs))

    def worker_for(self, workers: Sequence[Any], job: Any) -> Any | None:
        """An idle worker, else the least loaded one whose pipe can hold *job* behind its jobs."""
        best = None
        for worker in workers:
            if self.can_take(worker, job):
                if not worker.jobs:
                    return worker
                if best is None or len(worker.jobs) < len(best.jobs):
                    best = worker
        return best

    def may_end_within(self, job: Any, seconds: float, now: float) -> bool:
        """Whether *job* may end within *seconds* of *now*, as far as run times learned so far tell."""
        known, started = self._durations.get(job.profile), job.started
        return known is None or started is None or started + known[0] - known[1] - now < seconds

    def hand_over_at(self, worker: Any) -> float | None:
        """When to hand *worker* a queued job (monotonic), or None: not while it holds what it holds.

        Half the lead before it should have done every job it holds, if they are all
        of known, consistent, not short run time: a supervisor that wakes then finds
        at most the lead left even when the estimate of the start was a little early.
        With a job already handed over, that is the time to hand over the one after.
        """
        jobs = worker.jobs
        if not jobs or jobs[0].started is None:
            return None
        end = jobs[0].started
        for job in jobs:
            known = self._durations.get(job.profile)
            if known is None or job.profile in self._short or known[1] > known[0] / 4:
                return None
            end += known[0]
        return end - self.handover_lead / 2

    def hand_overs(self, workers: Sequence[Any], queue: Sequence[Any], now: float) -> tuple[list[Any], float | None]:
        """The workers to hand the first queued jobs to now (one each, in order), and seconds to the next.

        The second value is None when no job would be left queued, or none is due later.
        """
        chosen: list[Any] = []
        nearest = None
        for worker in workers:
            if len(chosen) == len(queue):
                break
            at = self.hand_over_at(worker)
            if at is None or not self.can_take(worker, queue[len(chosen)], hand_over=True):
                continue
            if len(worker.jobs) == 1 and at - now <= self.handover_lead / 2:
                chosen.append(worker)
            elif at > now:  # (past due with a job already handed over: the reply that ends the first comes first)
                nearest = at - now if nearest is None else min(nearest, at - now)
        return chosen, (nearest if len(chosen) < len(queue) else None)

    def hand_over_due_before(self, workers: Sequence[Any], queue: Sequence[Any], moment: float) -> bool:
        """Whether handing the first queued job to a busy worker falls due before *moment* (monotonic)."""
        if not queue:
            return False
        for worker in workers:
            at = self.hand_over_at(worker)
            if at is not None and at < moment and self.can_take(worker, queue[0], hand_over=True):
                return True
        return False

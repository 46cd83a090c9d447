"""WorkerPool's scheduling policy on its own: plain records, no worker started (issue 26)."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from robotlab.parallel.scheduling import HANDOVER_LEAD, PIPELINE, SHORT_JOB, SchedulingPolicy

FAST, SLOW = ("call", "m:fast"), ("call", "m:slow")


@dataclass(eq=False)
class Job:
    profile: tuple[str, str] = SLOW
    timeout: float | None = None
    started: float | None = None


@dataclass(eq=False)
class Worker:
    jobs: collections.deque = field(default_factory=collections.deque)
    ready: bool = True
    jobs_done: int = 0


def running(profile=SLOW, started=0.0, *queued) -> Worker:
    return Worker(collections.deque([Job(profile, started=started), *(Job(p) for p in queued)]))


def policy_knowing(*samples: tuple[tuple[str, str], float], **options) -> SchedulingPolicy:
    policy = SchedulingPolicy(**options)
    for profile, seconds in samples:
        policy.learn(profile, seconds)
    return policy


def test_an_idle_ready_worker_takes_any_job_and_a_starting_one_none():
    policy = SchedulingPolicy()
    assert policy.can_take(Worker(), Job())
    assert policy.can_take(Worker(), Job(timeout=5))
    assert not policy.can_take(Worker(ready=False), Job())


def test_only_short_jobs_wait_behind_short_jobs_up_to_the_pipeline_depth():
    policy = policy_knowing((FAST, SHORT_JOB / 10), (SLOW, 1.0))
    assert policy.can_take(running(FAST), Job(FAST))
    assert not policy.can_take(running(FAST), Job(SLOW))  # a slow job never waits behind another
    assert not policy.can_take(running(SLOW), Job(FAST))  # nor does a short one behind a slow one
    assert not policy.can_take(running(FAST), Job(("call", "m:unmeasured")))
    full = running(FAST, 0.0, *[FAST] * (PIPELINE - 1))
    assert not policy.can_take(full, Job(FAST))


def test_a_job_with_a_timeout_goes_only_to_an_idle_worker():
    policy = policy_knowing((FAST, SHORT_JOB / 10))
    assert not policy.can_take(running(FAST), Job(FAST, timeout=1.0))
    assert not policy.can_take(running(FAST), Job(FAST, timeout=1.0), hand_over=True)


def test_max_tasks_counts_the_jobs_done_and_those_in_the_pipe():
    policy = policy_knowing((FAST, SHORT_JOB / 10), max_tasks=3)
    assert policy.can_take(Worker(jobs_done=2), Job(FAST))
    assert not policy.can_take(Worker(jobs_done=3), Job(FAST))
    busy = running(FAST)
    busy.jobs_done = 2
    assert not policy.can_take(busy, Job(FAST))


def test_worker_for_prefers_an_idle_worker_then_the_least_loaded():
    policy = policy_knowing((FAST, SHORT_JOB / 10))
    two, one, idle = running(FAST, 0.0, FAST), running(FAST), Worker()
    assert policy.worker_for([two, one, idle], Job(FAST)) is idle
    assert policy.worker_for([two, one], Job(FAST)) is one
    assert policy.worker_for([two, one], Job(SLOW)) is None
    assert policy.worker_for([Worker(ready=False)], Job(FAST)) is None


def test_learn_keeps_moving_averages_and_the_short_set():
    policy = SchedulingPolicy()
    policy.learn(FAST, SHORT_JOB / 2)
    assert policy.can_take(running(FAST), Job(FAST))
    for _ in range(20):  # the average climbs past SHORT_JOB: no longer short
        policy.learn(FAST, SHORT_JOB * 10)
    assert not policy.can_take(running(FAST), Job(FAST))


def test_may_end_within_is_true_until_run_times_say_otherwise():
    policy = SchedulingPolicy()
    assert policy.may_end_within(Job(SLOW, started=0.0), 0.001, now=0.0)  # nothing learned yet
    policy.learn(SLOW, 1.0)  # average 1.0, deviation 0.5: may end from 0.5 s after its start
    assert policy.may_end_within(Job(SLOW, started=None), 0.001, now=0.0)  # not at the front yet
    assert not policy.may_end_within(Job(SLOW, started=0.0), 0.1, now=0.0)
    assert policy.may_end_within(Job(SLOW, started=0.0), 0.1, now=0.45)


def test_hand_over_at_needs_consistent_known_not_short_run_times():
    consistent = policy_knowing(*[(SLOW, 0.1)] * 10)
    at = consistent.hand_over_at(running(SLOW, started=5.0))
    assert at == pytest.approx(5.0 + 0.1 - HANDOVER_LEAD / 2)
    assert consistent.hand_over_at(running(SLOW, started=None)) is None
    assert consistent.hand_over_at(Worker()) is None
    assert SchedulingPolicy().hand_over_at(running(SLOW)) is None  # unknown
    varying = policy_knowing((SLOW, 0.01), (SLOW, 0.2), (SLOW, 0.01), (SLOW, 0.2))
    assert varying.hand_over_at(running(SLOW)) is None
    short = policy_knowing((FAST, SHORT_JOB / 10))
    assert short.hand_over_at(running(FAST)) is None  # short jobs pipeline instead


def test_hand_overs_gives_each_worker_about_to_finish_one_queued_job_in_order():
    policy = policy_knowing(*[(SLOW, 0.1)] * 10)
    soon, later, idle = running(SLOW, started=0.0), running(SLOW, started=0.05), Worker()
    now = 0.1 - HANDOVER_LEAD / 2  # soon is due now; later in 0.05 s
    chosen, nearest = policy.hand_overs([soon, later, idle], [Job(), Job()], now)
    assert chosen == [soon]
    assert nearest == pytest.approx(0.05)
    chosen, nearest = policy.hand_overs([soon, later], [Job()], now)
    assert chosen == [soon] and nearest is None  # the queue is used up
    assert policy.hand_overs([soon], [Job(timeout=1.0)], now) == ([], None)  # its clock starts when it starts


def test_hand_over_due_before():
    policy = policy_knowing(*[(SLOW, 0.1)] * 10)
    worker = running(SLOW, started=0.0)
    at = 0.1 - HANDOVER_LEAD / 2
    assert policy.hand_over_due_before([worker], [Job()], at + 0.01)
    assert not policy.hand_over_due_before([worker], [Job()], at - 0.01)
    assert not policy.hand_over_due_before([worker], [], at + 0.01)


workers = st.lists(st.builds(
    lambda profiles, started, ready, done: Worker(
        collections.deque(Job(p, started=started if i == 0 else None) for i, p in enumerate(profiles)), ready, done),
    st.lists(st.sampled_from([FAST, SLOW]), max_size=3), st.floats(0, 1), st.booleans(), st.integers(0, 4)),
    max_size=5)


@given(workers, st.lists(st.builds(Job, st.sampled_from([FAST, SLOW]), st.sampled_from([None, 1.0])), max_size=4),
       st.floats(0, 2), st.sampled_from([None, 3]))
def test_hand_overs_choose_distinct_busy_workers_at_most_one_per_queued_job(workers, queue, now, max_tasks):
    policy = policy_knowing(*[(SLOW, 0.1)] * 10, (FAST, SHORT_JOB / 10), max_tasks=max_tasks)
    chosen, nearest = policy.hand_overs(workers, queue, now)
    assert len(chosen) <= len(queue)
    assert len(set(map(id, chosen))) == len(chosen)
    for worker, job in zip(chosen, queue, strict=False):
        assert len(worker.jobs) == 1 and policy.can_take(worker, job, hand_over=True)
    assert nearest is None or nearest > 0

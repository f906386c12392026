"""``benchmarks/sched_trace.py``'s readers of perf's output, on lines in perf's own format."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import sched_trace as st  # noqa: E402

TIMEHIST = """\
           time    cpu  task name                       wait time  sch delay   run time
                        [tid/pid]                          (msec)     (msec)     (msec)
--------------- ------  ------------------------------  ---------  ---------  ---------
   32108.225875 [0000]  perf[8914]                          0.000      0.000      0.000
   32110.000100 [0000]  python[8872/8864]                   0.050      0.010      4.000
   32110.000200 [0001]  python[8872/8864]                   3.000      0.200      2.500
   32110.000300 [0001]  python[8864]                        0.700      0.100      0.300
   32110.000400 [0000]  <idle>                              0.000      0.000      1.250
   32111.500000 [0000]  python[8872/8864]                   9.000      0.000      1.000
   32110.000500 [0001]  translate-1[8873/8864]              0.100      0.000      0.200
   32110.000600 [0000]  perf[8864/9000]                     0.100      0.000      0.400
"""


def test_timehist_sums_each_tasks_turns_inside_the_window_and_bins_its_sleeps() -> None:
    tasks = st.parse_timehist(TIMEHIST, 32110.0, 32111.0)
    worker = tasks["python[8872/8864]"]
    # (the last turn is outside the window)
    assert (worker["run"], worker["rq"], worker["sleep"]) == pytest.approx((6.5, 0.21, 3.05))
    assert worker["bins"][0] == [1, 0.05] and worker["bins"][4] == [1, 3.0]  # <= 0.1 ms and 2-5 ms
    assert sum(n for n, _ in worker["bins"]) == 2
    assert tasks["python[8864]"]["run"] == 0.3 and tasks["<idle>"]["run"] == 1.25
    assert "perf[8914]" not in tasks  # before the window
    assert st.threads_of(tasks, 8864) == ["python[8872/8864]", "python[8864]", "translate-1[8873/8864]"]  # the busiest first
    assert st.workers_of(tasks, 8864) == ["translate-1[8873/8864]"]  # (by the name a worker gives itself)


SCRIPT = """\
python  9759 [000] 32427.761496: sched:sched_switch: prev_comm=python prev_pid=9759 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])
\t           85f16 __futex_abstimed_wait_common+0xc6 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          24f86e PyCOND_TIMEDWAIT+0xbe (inlined)
\t          24f86e take_gil+0xbe (/usr/lib/libpython3.11.so.1.0)

python  9759 [001] 32427.761600: sched:sched_switch: prev_comm=python prev_pid=9759 prev_prio=120 prev_state=R ==> next_comm=python next_pid=9750 next_prio=120
\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])
\t          24f86e take_gil+0xbe (/usr/lib/libpython3.11.so.1.0)

python  9759 [001] 32427.761700: sched:sched_switch: prev_comm=python prev_pid=9759 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
\t           85f16 __futex_abstimed_wait_common+0xc6 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          1a2b3c PyThread_acquire_lock_timed+0x5e (/usr/lib/libpython3.11.so.1.0)

python  9750 [001] 32427.761800: sched:sched_switch: prev_comm=python prev_pid=9750 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
\t          108cae __GI_epoll_pwait+0x6e (/usr/lib/x86_64-linux-gnu/libc.so.6)

python  9759 [001] 32429.000000: sched:sched_switch: prev_comm=python prev_pid=9759 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
\t          24f86e take_gil+0xbe (/usr/lib/libpython3.11.so.1.0)
"""


def test_sleep_causes_count_only_the_threads_sleeps_inside_the_window_by_their_first_telling_frame() -> None:
    counts = st.parse_sleep_causes(SCRIPT, 32427.0, 32428.0, {9759})
    # the preemption (state R), the other thread and the switch after the window are not counted
    assert counts == {(9759, "take_gil"): 1, (9759, "PyThread_acquire_lock_timed"): 1}

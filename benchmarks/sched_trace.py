"""Where HTTP's share of the machine goes: the kernel's scheduler trace of one HTTP run and one
in-process run of the same work.

    python benchmarks/sched_trace.py [--n 256] [--in-flight 64] [--gil]

(a) of ``bench_serving.py`` once each way, both under ``perf sched record -a`` (Linux ``perf``,
Debian's ``linux-perf``; root or ``kernel.perf_event_paranoid`` <= 1): the in-process closed loop
(the scheduler at its automatic layout, int8, 64 requests in flight, no HTTP) in this process, then
the server (``python -m rendition.service.main``, this tree, defaults) under the lean client.  Per
run, the core-seconds of each kind of thread (the workers computing, the server's event loop, the
client, the rest of the host, idle cores), and each worker's sleeps by length.  ``--gil`` also
records the stacks at each switch (``--call-graph dwarf``) and counts the workers' sleeps that
wait for the GIL (``take_gil``; reading the stacks takes minutes, and perf's own load shows as
the rest of the host).  Single runs: the machine's swings show between runs, so compare
the kinds of time within one run, not runs with each other.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_serving as bs  # noqa: E402
import loadgen  # noqa: E402

SLEEP_BINS_MS = (0.1, 0.5, 1, 2, 5, 10, 50, float("inf"))


def record(out: Path, gil: bool) -> subprocess.Popen:
    """``perf sched record`` of every CPU into ``out`` (stopped with SIGINT)."""
    cmd = ["perf", "sched", "record", "-a", "-k", "CLOCK_MONOTONIC", "-o", str(out)]
    if gil:  # (the stacks too: perf sched passes the option on to perf record)
        cmd += ["--call-graph", "dwarf,8192"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # (perf is recording)
    return proc


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(2)
    proc.wait(timeout=120)


def timehist(data: Path, t0: float, t1: float) -> dict[str, dict]:
    out = subprocess.run(
        ["perf", "sched", "timehist", "--no-call-graph", "-i", str(data)], capture_output=True, text=True, check=True
    )
    return parse_timehist(out.stdout, t0, t1)


def parse_timehist(text: str, t0: float, t1: float) -> dict[str, dict]:
    """Per task (``comm[tid/pid]``) inside [t0, t1]: run, runqueue and sleep milliseconds and the
    sleeps by length, from ``perf sched timehist`` (each line is a task's turn on a CPU, with the
    sleep and the runqueue wait before it)."""
    tasks: dict[str, dict] = collections.defaultdict(
        lambda: {"run": 0.0, "rq": 0.0, "sleep": 0.0, "bins": [[0, 0.0] for _ in SLEEP_BINS_MS]}
    )
    for line in text.splitlines():
        p = line.split()
        try:
            t, (sleep, rq, run) = float(p[0]), map(float, p[-3:])
        except (ValueError, IndexError):
            continue  # (the header)
        if not t0 <= t <= t1:
            continue
        task = tasks[" ".join(p[2:-3])]
        task["run"] += run
        task["rq"] += rq
        task["sleep"] += sleep
        b = next(i for i, edge in enumerate(SLEEP_BINS_MS) if sleep <= edge)
        task["bins"][b][0] += 1
        task["bins"][b][1] += sleep
    return tasks


def gil_waits(data: Path, t0: float, t1: float, tids: set[int]) -> collections.Counter:
    out = subprocess.run(
        ["perf", "script", "-i", str(data), "--tid", ",".join(map(str, sorted(tids)))], capture_output=True, text=True
    )
    return parse_sleep_causes(out.stdout, t0, t1, tids)


def parse_sleep_causes(text: str, t0: float, t1: float, tids: set[int]) -> collections.Counter:
    """Per (tid, cause): the switches into sleep of the threads ``tids`` inside [t0, t1], from
    ``perf script`` of switches recorded with their stacks; the cause is the first telling user
    frame: ``take_gil`` (the GIL), ``PyThread_acquire_lock_timed`` (a Python lock), epoll, else "other"."""
    counts: collections.Counter = collections.Counter()
    head = re.compile(r"(\d+\.\d+):\s+sched:sched_switch: prev_comm=\S+ prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+)")
    for event in text.split("\n\n"):
        lines = event.strip().splitlines()
        m = head.search(lines[0]) if lines else None
        if not m or int(m[2]) not in tids or not m[3].startswith("S") or not t0 <= float(m[1]) <= t1:
            continue
        names = [ln.split()[1].split("+")[0] for ln in lines[1:] if "kernel.kallsyms" not in ln and len(ln.split()) > 1]
        why = next((n for n in names if n in ("take_gil", "PyThread_acquire_lock_timed", "__GI_epoll_pwait")), "other")
        counts[(int(m[2]), why)] += 1
    return counts


def threads_of(tasks: dict[str, dict], pid: int) -> list[str]:
    """The task names of process ``pid``'s threads (``NAME[pid]`` its main thread, ``NAME[tid/pid]``
    the others: ``python``, or the name a thread gave itself), the busiest first."""
    mine = [n for n in tasks if n.endswith((f"[{pid}]", f"/{pid}]"))]
    return sorted(mine, key=lambda n: -tasks[n]["run"])


def workers_of(tasks: dict[str, dict], pid: int) -> list[str]:
    """Process ``pid``'s translation workers (its threads named ``translate-N``, ``rendition.model.threads``)."""
    return [n for n in threads_of(tasks, pid) if n.startswith("translate-")]


def tid_of(name: str) -> int:
    m = re.search(r"\[(\d+)", name)
    return int(m[1]) if m else -1


def report(title: str, tasks: dict[str, dict], seconds: float, workers: list[str], roles: dict[str, str]) -> None:
    cores = os.cpu_count() or 1
    print(f"\n## {title}: {seconds:.2f} s, {seconds * cores:.2f} core-seconds on {cores} cores")
    kinds: dict[str, float] = collections.Counter()
    for name, t in tasks.items():
        kind = "idle cores" if name.startswith("<idle>") else roles.get(name, "the rest of the host")
        kinds[kind] += t["run"] / 1e3
    for kind in ("workers computing", "event loop", "client", "the rest of the host", "idle cores"):
        if kind in kinds:
            print(f"  {kind:24s} {kinds[kind]:6.2f} core-s")
    print("  worker sleeps by length (ms): " + "  ".join(f"<={e:g}" for e in SLEEP_BINS_MS))
    for w in workers:
        t = tasks[w]
        bins = "  ".join(f"{n}/{ms:.0f}" for n, ms in t["bins"])
        print(f"  {w:22s} sleep {t['sleep']:6.0f} ms, runqueue {t['rq']:5.0f} ms: {bins}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=256, help="requests (the first DDTP test sentences)")
    p.add_argument("--in-flight", type=int, default=64)
    p.add_argument("--gil", action="store_true", help="also record stacks and count the workers' GIL waits")
    args = p.parse_args()
    texts = bs.test_sentences(n=args.n)
    me = os.getpid()
    with tempfile.TemporaryDirectory() as tmp:
        # In-process: the closed loop on the scheduler in this process.
        import torch

        from rendition.model.translation.translator import Translator

        tr = Translator.from_pretrained(device="cpu", compute_type="int8")
        tr.start_workers(0, 0)
        requests = bs.service_sentences(tr, texts)
        bs.closed_loop(tr.scheduler, requests, bs.route_options, args.in_flight)  # warm-up
        data = Path(tmp) / "inproc.data"
        perf = record(data, args.gil)
        t0 = time.monotonic()
        bs.closed_loop(tr.scheduler, requests, bs.route_options, args.in_flight)
        t1 = time.monotonic()
        stop(perf)
        tasks = timehist(data, t0, t1)
        workers = workers_of(tasks, me)
        report("in-process closed loop", tasks, t1 - t0, workers, {w: "workers computing" for w in workers})
        if args.gil:
            print("  worker sleeps by cause:", dict(gil_waits(data, t0, t1, {tid_of(w) for w in workers})))
        tr.close()
        torch.set_num_threads(1)

        # HTTP: the server under the lean client.
        with bs.serve(bs.ROOT, 0, {}) as url:
            pid = bs.SERVER_PIDS[url]

            def body(i: int) -> dict:
                return bs.translate_body(texts[i % len(texts)])

            def run() -> None:
                loadgen.run(
                    loadgen.raw_closed_loop(
                        url, body=body, concurrency=args.in_flight, max_requests=len(texts), timeout=300
                    )
                )

            run()  # warm-up
            data = Path(tmp) / "http.data"
            perf = record(data, args.gil)
            t0 = time.monotonic()
            run()
            t1 = time.monotonic()
            stop(perf)
            tasks = timehist(data, t0, t1)
            loop = f"python[{pid}]"
            workers = workers_of(tasks, pid)
            roles = {n: "client" for n in threads_of(tasks, me)} | {w: "workers computing" for w in workers}
            roles[loop] = "event loop"
            report("HTTP", tasks, t1 - t0, workers, roles)
            if args.gil:
                print("  worker sleeps by cause:", dict(gil_waits(data, t0, t1, {tid_of(w) for w in workers})))


if __name__ == "__main__":
    main()

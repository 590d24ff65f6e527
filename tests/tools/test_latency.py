"""rtmem latency: a short run's JSON has the envelope, every summary field
and figures that agree with one another (ordered percentiles, samples plus
overruns equal to the deadlines, a histogram and per-second lines that add
up to the samples); overruns are counted when the loop is made to miss
deadlines (the test hook RTMEM_LATENCY_TEST_STALL=K: the loop oversleeps
past K deadlines after wake-ups 100, 200 and 300, so the run has at least
3K overruns, and a latency of at least K periods); SIGINT and SIGTERM end
a run early with the summary and the JSON; a run that fails or dies
leaves an existing result file as it was, and nothing behind; --noise
writes its own members; a run without privileges says so and still
measures; bad usage exits 2 with the message and the --help hint.

No assertion depends on how fast the machine is: the figures are checked
against each other, never against a bound in microseconds.

usage: test_latency.py RTMEM_BINARY
"""
import os
import signal
import subprocess
import sys

from rtmemtest import Checks, TempDir, as_nobody, envelope_ok, load_json, run

rtmem = sys.argv[1]
checks = Checks("tools.latency")
SUMMARY = ["samples", "overruns", "min_ns", "avg_ns", "p50_ns", "p99_ns", "p999_ns", "p9999_ns",
           "max_ns"]
GOOD = '{"a previous": "good result"}\n'


def hist_ok(what, hist, total):
    """Buckets contiguous, [lo, hi) powers of two, counts adding up to total."""
    checks.ok(sum(b["count"] for b in hist) == total,
              "%s: the histogram's counts add up to %d" % (what, total), hist)
    checks.ok(all(b["hi_ns"] == 2 * b["lo_ns"] or (b["lo_ns"] == 0 and b["hi_ns"] == 1)
                  for b in hist), "%s: each bucket is [2^(b-1), 2^b)" % what, hist)
    checks.ok(all(hist[i]["hi_ns"] == hist[i + 1]["lo_ns"] for i in range(len(hist) - 1)),
              "%s: the buckets are contiguous" % what, hist)
    checks.ok(not hist or (hist[0]["count"] > 0 and hist[-1]["count"] > 0),
              "%s: from the first non-empty bucket to the last" % what, hist)


def summary_ok(what, d, stopped=False):
    """The summary's fields and how they agree; returns the summary."""
    s = d.get("summary") or {}
    checks.ok(list(s.keys()) == SUMMARY, "%s: the summary has exactly its fields" % what,
              list(s.keys()))
    if list(s.keys()) != SUMMARY:
        return None
    order = [s["min_ns"], s["p50_ns"], s["p99_ns"], s["p999_ns"], s["p9999_ns"], s["max_ns"]]
    checks.ok(order == sorted(order), "%s: min <= p50 <= p99 <= p99.9 <= p99.99 <= max" % what,
              order)
    checks.ok(s["min_ns"] <= s["avg_ns"] <= s["max_ns"], "%s: min <= avg <= max" % what, s)
    deadlines = d["deadlines"]
    checks.ok(deadlines == d["params"]["duration_ns"] // d["params"]["period_ns"],
              "%s: deadlines = duration / period" % what, deadlines)
    if stopped:
        checks.ok(s["samples"] + s["overruns"] < deadlines,
                  "%s: stopped early, fewer deadlines than planned" % what, s)
    else:
        checks.ok(s["samples"] + s["overruns"] == deadlines,
                  "%s: samples + overruns = deadlines" % what, (s, deadlines))
        # Generous: a wake-up later than a period is an overrun, and the
        # machine would have to miss nine deadlines in ten to fail this.
        checks.ok(s["samples"] >= deadlines // 10, "%s: samples ~ duration / period" % what, s)
    checks.ok(d["dropped"] == 0, "%s: no sample dropped" % what, d.get("dropped"))
    hist_ok(what, d["histogram"], s["samples"])
    lines = d["per_second"]
    checks.ok(sum(x["samples"] for x in lines) == s["samples"],
              "%s: the per-second lines add up to the samples" % what, lines)
    checks.ok(sum(x["overruns"] for x in lines) == s["overruns"] and
              (not lines or lines[-1]["overruns_total"] == s["overruns"]),
              "%s: the per-second overruns add up" % what, lines)
    checks.ok([x["second"] for x in lines] == list(range(1, len(lines) + 1)),
              "%s: a line per second, in order" % what, lines)
    checks.ok(all(x["min_ns"] <= x["avg_ns"] <= x["max_ns"] for x in lines if x["samples"]),
              "%s: each second's min <= avg <= max" % what, lines)
    # A wake-up less than a period late passed no deadline: a second whose
    # latest wake-up was that early has no overrun (floor(late / period)).
    period = d["params"]["period_ns"]
    checks.ok(all(x["overruns"] == 0 for x in lines
                  if x["samples"] and x["max_ns"] is not None and x["max_ns"] < period),
              "%s: no overrun in a second whose every wake-up was less than a period late"
              % what, lines)
    checks.ok(s["overruns"] == 0 or s["max_ns"] >= period,
              "%s: overruns only with a wake-up a period late or more" % what, s)
    if lines:
        checks.ok(lines[-1]["best_ns"] == s["min_ns"] and lines[-1]["worst_ns"] == s["max_ns"],
                  "%s: best and worst so far end at the run's min and max" % what, lines[-1])
    above = d["above"]
    checks.ok([a["threshold_ns"] for a in above] == d["params"]["thresholds_ns"],
              "%s: a count per threshold" % what, above)
    counts = [a["count"] for a in above]
    checks.ok(counts == sorted(counts, reverse=True) and all(c <= s["samples"] for c in counts),
              "%s: fewer wake-ups above a higher threshold" % what, above)
    return s


def default_signals():
    """In the child: the signals sent below at their default action, even
    when this test runs where they are ignored (a background job ignores
    SIGINT, nohup SIGHUP), since rtmem keeps an ignored signal ignored."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def leftovers(d, expected):
    return sorted(set(os.listdir(d)) - set(expected))


with TempDir() as tmp:
    # A short run: the envelope, the summary, the figures agreeing.
    path = os.path.join(tmp, "l.json")
    args = ["--duration", "1", "--period", "1000us", "--json", path]
    r = run(rtmem, "latency", *args, timeout=120)
    checks.ok(r.returncode == 0, "latency --duration 1", r)
    d = load_json(path)
    envelope_ok(checks, d, "latency", "rtmem-latency/1", args)
    if d:
        checks.ok(d["passed"] is True and d["mode"] == "latency" and d["noise"] is None,
                  "latency: passed, latency mode, no noise members", d.get("mode"))
        checks.ok(d["params"]["period_ns"] == 1000000 and d["params"]["duration_ns"] == 10**9,
                  "latency: the period and duration as given", d["params"])
        checks.ok(d["stopped_by"] is None, "latency: not stopped", d["stopped_by"])
        checks.ok(d["timer"]["source"] == "clock_gettime(CLOCK_MONOTONIC)",
                  "latency: the timer is the clock the loop reads", d["timer"])
        rt = d["real_time"]
        checks.ok(rt is not None and d["real_time_granted"] ==
                  (rt["fifo"]["granted"] and rt["mlockall"]["granted"]),
                  "latency: real_time_granted is SCHED_FIFO and mlockall both granted", rt)
        checks.ok(set(d["page_faults"]) == {"minor", "major"}, "latency: page faults",
                  d["page_faults"])
        summary_ok("latency", d)
    checks.ok(r.stdout.count("\nRTD|") == 1 and "\nRTS|" in r.stdout,
              "latency: a line per second and the summary line", r)
    for text in ("percentiles:        p50 ", "later than :    10us ", "histogram  : ", "page faults: ",
                 "real-time setup (requested -> in force)", "results written to " + path):
        checks.ok(text in r.stdout, "latency: the report has '%s'" % text, r)
    checks.ok(("NOT REAL-TIME" in r.stdout) == (d is not None and not d["real_time_granted"]),
              "latency: says plainly when it is not real-time, and only then", r)

    # Overruns forced: the hook oversleeps past K deadlines three times.
    path = os.path.join(tmp, "o.json")
    k = 5
    r = run(rtmem, "latency", "--duration", "1", "--period", "1ms", "--json", path,
            env={"RTMEM_LATENCY_TEST_STALL": str(k)}, timeout=120)
    d = load_json(path)
    checks.ok(r.returncode == 0 and d, "latency with missed deadlines", r)
    if d:
        s = summary_ok("overruns", d)
        if s:
            checks.ok(s["overruns"] >= 3 * k, "overruns: each missed deadline counted", s)
            checks.ok(s["max_ns"] >= k * 1000000, "overruns: the late wake-up is a sample", s)
        checks.ok(d["params"]["test_stall_periods"] == k, "overruns: the hook is on record",
                  d["params"])
    checks.ok("test hook RTMEM_LATENCY_TEST_STALL=5" in r.stdout, "overruns: the hook is said",
              r)

    # SIGINT and SIGTERM: the run ends early, with the summary and the JSON
    # (which replaces a previous result, complete); SIGHUP kills it and the
    # previous result stays. Sent once the first per-second line is out.
    d_dir = os.path.join(tmp, "sig")
    os.mkdir(d_dir)
    for sig, ends in ((signal.SIGINT, True), (signal.SIGTERM, True), (signal.SIGHUP, False)):
        name = signal.Signals(sig).name
        path = os.path.join(d_dir, "s.json")
        with open(path, "w") as f:
            f.write(GOOD)
        p = subprocess.Popen([rtmem, "latency", "--duration", "60", "--json", path],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
        out = []
        for line in p.stdout:
            out.append(line)
            if line.startswith("RTD|"):
                p.send_signal(sig)
                break
        rest, err = p.communicate(timeout=120)
        r = subprocess.CompletedProcess(p.args, p.returncode, "".join(out) + rest, err)
        if ends:
            checks.ok(r.returncode == 0, "%s ends the run, exit status 0" % name, r)
            checks.ok("stopped by %s after " % name in r.stdout and "\nRTS|" in r.stdout,
                      "%s: the summary, and why the run was short" % name, r)
            d = load_json(path)
            if checks.ok(d is not None and d.get("stopped_by") == name,
                         "%s: the JSON written, stopped_by %s" % (name, name), d):
                summary_ok(name, d, stopped=True)
        else:
            checks.ok(r.returncode == -sig, "%s kills the run" % name, r)
            with open(path) as f:
                checks.ok(f.read() == GOOD, "%s: the previous result is intact" % name)
        checks.ok(not leftovers(d_dir, ["s.json"]), "%s: nothing left behind" % name,
                  leftovers(d_dir, ["s.json"]))

    # A run that fails (its report cannot be written) or is refused leaves
    # the previous result as it was.
    path = os.path.join(d_dir, "s.json")
    with open(path, "w") as f:
        f.write(GOOD)
    with open("/dev/full", "w") as full:
        r = run(rtmem, "latency", "--duration", "100ms", "--json", path, stdout=full,
                timeout=120)
    checks.ok(r.returncode == 1 and "No space left on device" in r.stderr,
              "latency > /dev/full fails with its cause", r)
    r = run(rtmem, "latency", "--period", "0", "--json", path)
    checks.ok(r.returncode == 2, "bad usage with --json", r)
    with open(path) as f:
        checks.ok(f.read() == GOOD, "a failed run: the previous result is intact")
    checks.ok(not leftovers(d_dir, ["s.json"]), "a failed run: nothing left behind",
              leftovers(d_dir, ["s.json"]))

    # --noise: its own members; the latency members null.
    path = os.path.join(tmp, "n.json")
    args = ["--noise", "--duration", "1", "--json", path]
    r = run(rtmem, "latency", *args, timeout=120)
    checks.ok(r.returncode == 0, "latency --noise --duration 1", r)
    d = load_json(path)
    envelope_ok(checks, d, "latency", "rtmem-latency/1", args)
    if d:
        n = d["noise"] or {}
        checks.ok(d["mode"] == "noise" and d["summary"] is None and d["histogram"] is None and
                  d["per_second"] is None, "noise: the latency members are null", d.get("mode"))
        want = ["threshold_ns", "spun_ns", "rested_ns", "reads", "gaps", "total_ns", "max_ns",
                "stall_threshold_ns", "stalls", "preempted", "machine_stalls", "histogram",
                "per_second"]
        checks.ok(list(n.keys()) == want, "noise: its members", list(n.keys()))
        checks.ok(not n.get("machine_stalls") or (n.get("stalls", 0) > 0 and
                                                   n.get("preempted") == 0),
                  "noise: the machine is blamed only for stalls of a thread nobody preempted", n)
        if list(n.keys()) == want:
            checks.ok(n["threshold_ns"] == 10000, "noise: the default threshold is 10us", n)
            checks.ok(n["spun_ns"] + n["rested_ns"] == d["measured_ns"] and n["reads"] > 0,
                      "noise: spun + rested = the time measured", n)
            if n["gaps"]:
                checks.ok(n["threshold_ns"] < n["max_ns"] <= n["total_ns"],
                          "noise: threshold < longest gap <= total", n)
            else:
                checks.ok(n["max_ns"] is None and n["total_ns"] == 0, "noise: no gap", n)
            hist_ok("noise", n["histogram"], n["gaps"])
            # 1ms is inside the bucket [524288, 1048576) ns.
            sure = sum(b["count"] for b in n["histogram"] if b["lo_ns"] >= 1000000)
            maybe = sum(b["count"] for b in n["histogram"] if (b["hi_ns"] or 2**64) > 1000000)
            checks.ok(sure <= n["stalls"] <= maybe,
                      "noise: the stalls are the gaps of 1ms or more", n)
            checks.ok(sum(x["gaps"] for x in n["per_second"]) == n["gaps"] and
                      sum(x["spun_ns"] for x in n["per_second"]) == n["spun_ns"],
                      "noise: the per-second lines add up", n["per_second"])
            # A spin that another task preempted (its involuntary switches)
            # may have lost the time to that task, not to the machine.
            stalls = (n["stalls"] > 0 and d["real_time"]["fifo"]["granted"] and
                      n["preempted"] == 0)
            checks.ok(n["machine_stalls"] == stalls,
                      "noise: machine stalls when a SCHED_FIFO spin nobody preempted lost 1ms "
                      "or more", n)
            checks.ok(("THE MACHINE ITSELF STALLS" in r.stdout) == stalls,
                      "noise: the summary says so, and only then", r)
    checks.ok("\nNTD|" in r.stdout and "\nNTS|" in r.stdout and "gaps       : " in r.stdout and "measured   : " in r.stdout,
              "noise: per-second lines and the summary", r)

    # Without privileges: says so, and still measures. As nobody, when this
    # test may switch to it; otherwise this test is unprivileged already.
    unpriv = as_nobody("test_latency", rtmem)
    if unpriv is not None:
        n_dir = os.path.join(tmp, "nobody")
        os.mkdir(n_dir)
        os.chmod(tmp, 0o711)
        os.chmod(n_dir, 0o777)
        path = os.path.join(n_dir, "u.json")
        r = run(*unpriv, rtmem, "latency", "--duration", "1", "--json", path, timeout=120)
        d = load_json(path)
        checks.ok(r.returncode == 0 and d, "latency without privileges", r)
        checks.ok("NOT REAL-TIME: this run has no real-time priority" in r.stdout,
                  "without privileges: says it has no real-time priority", r)
        if d:
            checks.ok(d["real_time_granted"] is False and
                      d["real_time"]["fifo"]["granted"] is False and
                      d["real_time"]["fifo"]["error"], "without privileges: on record",
                      d["real_time"])
            s = summary_ok("without privileges", d)
            checks.ok(s is not None and s["samples"] > 0, "without privileges: it measured", s)

# Bad usage: exit status 2, the message, the hint; nothing run.
for args, want in (
        (["--period", "5"], "--period: '5' (5us) is out of range [10us, 1s]"),
        (["--period", "1ms", "--duration", "0"], "--duration: '0' (0ns) is out of range"),
        (["--period", "1s", "--duration", "500ms"], "--duration (500ms) is shorter than --period"),
        (["--period", "10us", "--duration", "3600"],
         "--duration 3600s at --period 10us is 360000000 wake-ups; at most 16777216"),
        (["--threshold", "1x"], "--threshold: '1x' is not a time"),
        (["--threshold", ",".join(str(i) for i in range(1, 18))],
         "--threshold: at most 16 thresholds"),
        (["--noise", "--period", "1ms"], "--period is the latency run's"),
        (["--noise", "--threshold", "5us"], "--threshold is the latency run's"),
        (["--noise-threshold", "5us"], "--noise-threshold needs --noise"),
        (["--noise", "--noise-threshold", "0"], "--noise-threshold: '0' (0ns) is out of range"),
        (["--prio", "100"], "--prio: '100' is out of range [1, 99]"),
        (["--noise", "--noise-threshold", "2ms"], "--noise-threshold: '2ms' is out of range"),
        (["--no-rt", "--prio", "50"], "--no-rt runs under SCHED_OTHER: --prio would not be used"),
        (["--nosuch"], "unknown option '--nosuch'"),
        (["operand"], "unexpected argument 'operand'")):
    r = run(rtmem, "latency", *args)
    checks.ok(r.returncode == 2 and ("rtmem latency: " + want) in r.stderr and
              "Try 'rtmem latency --help'." in r.stderr and r.stdout == "",
              "bad usage %s" % " ".join(args), r)

# --no-rt: SCHED_OTHER, unpinned unless --cpu is given (then pinned to it).
CPU = max(os.sched_getaffinity(0))
with TempDir() as tmp:
    path = os.path.join(tmp, "n.json")
    for args, pinned in ((["--no-rt"], False), (["--no-rt", "--cpu", str(CPU)], True)):
        r = run(rtmem, "latency", "--duration", "100ms", "--json", path, *args)
        d = load_json(path)
        rt = (d or {}).get("real_time") or {}
        checks.ok(r.returncode == 0 and rt.get("policy") == "SCHED_OTHER" and
                  not rt["fifo"]["requested"] and rt["affinity"]["requested"] == pinned and
                  (not pinned or (rt["cpu_now"] == CPU and rt["cpus_allowed"] == 1)),
                  "%s: SCHED_OTHER, %s" % (" ".join(args), "pinned" if pinned else "unpinned"),
                  rt or r)

r = run(rtmem, "latency", "--help")
checks.ok(r.returncode == 0 and "usage: rtmem latency" in r.stdout and
          "(default 1ms; bare number: us)" in r.stdout and
          "(default 10s; --quick 2s)" in r.stdout and "--noise-threshold T" in r.stdout,
          "latency --help: the options and their defaults", r)
r = run(rtmem, "--help")
checks.ok(r.returncode == 0 and "\n  latency " in r.stdout, "rtmem --help lists latency", r)
checks.done()

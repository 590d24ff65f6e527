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
"""
import os
import signal
import subprocess

import pytest

from rtmemtest import (as_nobody, assert_envelope, assert_kept, explain, left_in, load_json,
                       previous_result, run, signal_at, started)

SUMMARY = ["samples", "overruns", "min_ns", "avg_ns", "p50_ns", "p99_ns", "p999_ns", "p9999_ns",
           "max_ns"]
NOISE = ["threshold_ns", "spun_ns", "rested_ns", "reads", "gaps", "total_ns", "max_ns",
         "stall_threshold_ns", "stalls", "preempted", "machine_stalls", "histogram",
         "per_second"]
STALL = 5  # RTMEM_LATENCY_TEST_STALL: the deadlines each stall oversleeps


def assert_hist(what, hist, total):
    """Buckets contiguous, [lo, hi) powers of two, counts adding up to total."""
    assert sum(b["count"] for b in hist) == total, \
        "%s: the histogram's counts do not add up to %d: %s" % (what, total, hist)
    assert all(b["hi_ns"] == 2 * b["lo_ns"] or (b["lo_ns"] == 0 and b["hi_ns"] == 1)
               for b in hist), "%s: a bucket is not [2^(b-1), 2^b): %s" % (what, hist)
    assert all(hist[i]["hi_ns"] == hist[i + 1]["lo_ns"] for i in range(len(hist) - 1)), \
        "%s: the buckets are not contiguous: %s" % (what, hist)
    assert not hist or (hist[0]["count"] > 0 and hist[-1]["count"] > 0), \
        "%s: not from the first non-empty bucket to the last: %s" % (what, hist)


def assert_summary(what, d, stopped=False):
    """The summary's fields and how they agree with the rest; the summary."""
    s = d.get("summary") or {}
    assert list(s.keys()) == SUMMARY, "%s: the summary's fields: %s" % (what, list(s.keys()))
    order = [s["min_ns"], s["p50_ns"], s["p99_ns"], s["p999_ns"], s["p9999_ns"], s["max_ns"]]
    assert order == sorted(order), "%s: not min <= p50 <= p99 <= p99.9 <= p99.99 <= max: %s" \
        % (what, order)
    assert s["min_ns"] <= s["avg_ns"] <= s["max_ns"], "%s: not min <= avg <= max: %s" % (what, s)
    deadlines = d["deadlines"]
    assert deadlines == d["params"]["duration_ns"] // d["params"]["period_ns"], \
        "%s: deadlines %s is not duration / period" % (what, deadlines)
    if stopped:
        assert s["samples"] + s["overruns"] < deadlines, \
            "%s: stopped early, yet not fewer deadlines than planned: %s" % (what, s)
    else:
        assert s["samples"] + s["overruns"] == deadlines, \
            "%s: samples + overruns != deadlines %d: %s" % (what, deadlines, s)
        # Generous: a wake-up later than a period is an overrun, and the
        # machine would have to miss nine deadlines in ten to fail this.
        assert s["samples"] >= deadlines // 10, "%s: too few samples: %s" % (what, s)
    assert d["dropped"] == 0, "%s: samples dropped: %s" % (what, d.get("dropped"))
    assert_hist(what, d["histogram"], s["samples"])
    lines = d["per_second"]
    assert sum(x["samples"] for x in lines) == s["samples"], \
        "%s: the per-second lines do not add up to the samples: %s" % (what, lines)
    assert sum(x["overruns"] for x in lines) == s["overruns"] and \
        (not lines or lines[-1]["overruns_total"] == s["overruns"]), \
        "%s: the per-second overruns do not add up: %s" % (what, lines)
    assert [x["second"] for x in lines] == list(range(1, len(lines) + 1)), \
        "%s: not a line per second, in order: %s" % (what, lines)
    assert all(x["min_ns"] <= x["avg_ns"] <= x["max_ns"] for x in lines if x["samples"]), \
        "%s: a second's min <= avg <= max fails: %s" % (what, lines)
    # A wake-up less than a period late passed no deadline: a second whose
    # latest wake-up was that early has no overrun (floor(late / period)).
    period = d["params"]["period_ns"]
    assert all(x["overruns"] == 0 for x in lines
               if x["samples"] and x["max_ns"] is not None and x["max_ns"] < period), \
        "%s: an overrun in a second whose every wake-up was less than a period late: %s" \
        % (what, lines)
    assert s["overruns"] == 0 or s["max_ns"] >= period, \
        "%s: overruns without a wake-up a period late or more: %s" % (what, s)
    if lines:
        assert lines[-1]["best_ns"] == s["min_ns"] and lines[-1]["worst_ns"] == s["max_ns"], \
            "%s: best and worst so far do not end at the run's min and max: %s" \
            % (what, lines[-1])
    above = d["above"]
    assert [a["threshold_ns"] for a in above] == d["params"]["thresholds_ns"], \
        "%s: not a count per threshold: %s" % (what, above)
    counts = [a["count"] for a in above]
    assert counts == sorted(counts, reverse=True) and all(c <= s["samples"] for c in counts), \
        "%s: more wake-ups above a higher threshold: %s" % (what, above)
    return s


def good_result(d):
    return previous_result(os.path.join(d, "s.json"))


# A short run: the envelope, the summary, the figures agreeing.

@pytest.fixture(scope="module")
def short(rtmem, module_dir):
    """`latency --duration 1 --period 1000us`: (its result, its document,
    its arguments)."""
    path = os.path.join(module_dir, "l.json")
    args = ["--duration", "1", "--period", "1000us", "--json", path]
    r = run(rtmem, "latency", *args, timeout=120)
    assert r.returncode == 0, explain(r)
    return r, load_json(path), args


def test_a_short_run_writes_the_envelope(short):
    _, d, args = short
    assert_envelope(d, "latency", "rtmem-latency/1", args)


def test_a_short_run_passes_in_latency_mode_with_the_period_and_duration_given(short):
    _, d, _ = short
    assert d["passed"] is True and d["mode"] == "latency" and d["noise"] is None, \
        (d["passed"], d["mode"], d["noise"])
    assert d["params"]["period_ns"] == 1000000 and d["params"]["duration_ns"] == 10**9, \
        d["params"]
    assert d["stopped_by"] is None, d["stopped_by"]


def test_the_timer_is_the_clock_the_loop_reads(short):
    _, d, _ = short
    assert d["timer"]["source"] == "clock_gettime(CLOCK_MONOTONIC)", d["timer"]


def test_real_time_granted_is_sched_fifo_and_mlockall_both_granted(short):
    _, d, _ = short
    rt = d["real_time"]
    assert rt is not None and d["real_time_granted"] == \
        (rt["fifo"]["granted"] and rt["mlockall"]["granted"]), (d["real_time_granted"], rt)


def test_page_faults_are_counted_minor_and_major(short):
    _, d, _ = short
    assert set(d["page_faults"]) == {"minor", "major"}, d["page_faults"]


def test_the_summary_the_histogram_and_the_seconds_agree(short):
    _, d, _ = short
    assert_summary("latency", d)


def test_the_report_has_a_line_per_second_the_summary_and_its_sections(short):
    r, _, args = short
    assert r.stdout.count("\nRTD|") == 1 and "\nRTS|" in r.stdout, explain(r)
    for text in ("percentiles:        p50 ", "later than :    10us ", "histogram  : ",
                 "page faults: ", "real-time setup (requested -> in force)",
                 "results written to " + args[-1]):
        assert text in r.stdout, "the report has no '%s':\n%s" % (text, explain(r))


def test_the_report_says_not_real_time_when_and_only_when_it_is_not(short):
    r, d, _ = short
    assert ("NOT REAL-TIME" in r.stdout) == (d is not None and not d["real_time_granted"]), \
        explain(r)


# Overruns forced: the hook oversleeps past STALL deadlines three times.

@pytest.fixture(scope="module")
def stalled(rtmem, module_dir):
    path = os.path.join(module_dir, "o.json")
    r = run(rtmem, "latency", "--duration", "1", "--period", "1ms", "--json", path,
            env={"RTMEM_LATENCY_TEST_STALL": str(STALL)}, timeout=120)
    d = load_json(path)
    assert r.returncode == 0 and d, explain(r)
    return r, d


def test_missed_deadlines_are_counted_and_the_late_wake_up_is_a_sample(stalled):
    _, d = stalled
    s = assert_summary("overruns", d)
    assert s["overruns"] >= 3 * STALL, "each missed deadline not counted: %s" % s
    assert s["max_ns"] >= STALL * 1000000, "the late wake-up is not a sample: %s" % s


def test_the_stall_hook_is_on_record_and_said(stalled):
    r, d = stalled
    assert d["params"]["test_stall_periods"] == STALL, d["params"]
    assert "test hook RTMEM_LATENCY_TEST_STALL=5" in r.stdout, explain(r)


# SIGINT and SIGTERM: the run ends early, with the summary and the JSON
# (which replaces a previous result, complete); SIGHUP kills it and the
# previous result stays. Sent once the first per-second line is out.

def interrupted(rtmem, d, sig):
    path = good_result(d)
    with started(rtmem, "latency", "--duration", "60", "--json", path) as p:
        return signal_at(p, "RTD|", sig), path


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_sigint_and_sigterm_end_the_run_early_with_the_summary_and_the_json(rtmem, tmp_dir, sig):
    name = signal.Signals(sig).name
    r, path = interrupted(rtmem, tmp_dir, sig)
    assert r.returncode == 0, explain(r)
    assert "stopped by %s after " % name in r.stdout and "\nRTS|" in r.stdout, explain(r)
    d = load_json(path)
    assert d is not None and d.get("stopped_by") == name, d
    assert_summary(name, d, stopped=True)
    assert left_in(tmp_dir, ["s.json"]) == [], "left behind"


def test_sighup_kills_the_run_and_the_previous_result_stays(rtmem, tmp_dir):
    r, path = interrupted(rtmem, tmp_dir, signal.SIGHUP)
    assert r.returncode == -signal.SIGHUP, explain(r)
    assert_kept(path)
    assert left_in(tmp_dir, ["s.json"]) == [], "left behind"


# A run that fails (its report cannot be written) or is refused leaves the
# previous result as it was.

def test_a_run_whose_report_cannot_be_written_fails_and_keeps_the_previous_result(
        rtmem, tmp_dir):
    path = good_result(tmp_dir)
    with open("/dev/full", "w") as full:
        r = run(rtmem, "latency", "--duration", "100ms", "--json", path, stdout=full,
                timeout=120)
    assert r.returncode == 1 and "No space left on device" in r.stderr, explain(r)
    assert_kept(path)
    assert left_in(tmp_dir, ["s.json"]) == [], "left behind"


def test_bad_usage_with_json_keeps_the_previous_result(rtmem, tmp_dir):
    path = good_result(tmp_dir)
    r = run(rtmem, "latency", "--period", "0", "--json", path)
    assert r.returncode == 2, explain(r)
    assert_kept(path)
    assert left_in(tmp_dir, ["s.json"]) == [], "left behind"


# --noise: its own members; the latency members null.

@pytest.fixture(scope="module")
def noise(rtmem, module_dir):
    """`latency --noise --duration 1`: (its result, its document, its
    arguments)."""
    path = os.path.join(module_dir, "n.json")
    args = ["--noise", "--duration", "1", "--json", path]
    r = run(rtmem, "latency", *args, timeout=120)
    assert r.returncode == 0, explain(r)
    return r, load_json(path), args


def noise_members(noise):
    """The document's noise member, its members checked first."""
    _, d, _ = noise
    n = d["noise"] or {}
    assert list(n.keys()) == NOISE, "noise: its members: %s" % list(n.keys())
    return n


def test_noise_writes_the_envelope_and_nulls_the_latency_members(noise):
    _, d, args = noise
    assert_envelope(d, "latency", "rtmem-latency/1", args)
    assert d["mode"] == "noise" and d["summary"] is None and d["histogram"] is None and \
        d["per_second"] is None, (d["mode"], d["summary"], d["histogram"], d["per_second"])


def test_noise_has_its_members_and_a_10us_default_threshold(noise):
    n = noise_members(noise)
    assert n["threshold_ns"] == 10000, n


def test_noise_blames_the_machine_only_for_stalls_of_a_thread_nobody_preempted(noise):
    _, d, _ = noise
    n = d["noise"] or {}
    assert not n.get("machine_stalls") or (n.get("stalls", 0) > 0 and n.get("preempted") == 0), n


def test_noise_spun_plus_rested_is_the_time_measured(noise):
    _, d, _ = noise
    n = noise_members(noise)
    assert n["spun_ns"] + n["rested_ns"] == d["measured_ns"] and n["reads"] > 0, \
        (n, d["measured_ns"])


def test_noise_longest_gap_is_between_the_threshold_and_the_total(noise):
    n = noise_members(noise)
    if n["gaps"]:
        assert n["threshold_ns"] < n["max_ns"] <= n["total_ns"], n
    else:
        assert n["max_ns"] is None and n["total_ns"] == 0, n


def test_noise_histogram_and_per_second_lines_add_up_to_the_gaps(noise):
    n = noise_members(noise)
    assert_hist("noise", n["histogram"], n["gaps"])
    assert sum(x["gaps"] for x in n["per_second"]) == n["gaps"] and \
        sum(x["spun_ns"] for x in n["per_second"]) == n["spun_ns"], n["per_second"]


def test_noise_stalls_are_the_gaps_of_1ms_or_more(noise):
    n = noise_members(noise)
    # 1ms is inside the bucket [524288, 1048576) ns.
    sure = sum(b["count"] for b in n["histogram"] if b["lo_ns"] >= 1000000)
    maybe = sum(b["count"] for b in n["histogram"] if (b["hi_ns"] or 2**64) > 1000000)
    assert sure <= n["stalls"] <= maybe, (sure, maybe, n)


def test_noise_machine_stalls_when_a_sched_fifo_spin_nobody_preempted_lost_1ms(noise):
    r, d, _ = noise
    n = noise_members(noise)
    # A spin that another task preempted (its involuntary switches) may
    # have lost the time to that task, not to the machine.
    stalls = n["stalls"] > 0 and d["real_time"]["fifo"]["granted"] and n["preempted"] == 0
    assert n["machine_stalls"] == stalls, n
    assert ("THE MACHINE ITSELF STALLS" in r.stdout) == stalls, explain(r)


def test_noise_report_has_per_second_lines_and_the_summary(noise):
    r, _, _ = noise
    for text in ("\nNTD|", "\nNTS|", "gaps       : ", "measured   : "):
        assert text in r.stdout, "the report has no %r:\n%s" % (text, explain(r))


# Without privileges: says so, and still measures. As nobody, when this
# test may switch to it; otherwise this test is unprivileged already.

def test_a_run_without_privileges_says_so_and_still_measures(rtmem, tmp_dir):
    unpriv = as_nobody("test_latency", rtmem)
    if unpriv is None:
        pytest.skip("root cannot run rtmem as nobody here")
    n_dir = os.path.join(tmp_dir, "nobody")
    os.mkdir(n_dir)
    os.chmod(tmp_dir, 0o711)
    os.chmod(n_dir, 0o777)
    path = os.path.join(n_dir, "u.json")
    r = run(*unpriv, rtmem, "latency", "--duration", "1", "--json", path, timeout=120)
    d = load_json(path)
    assert r.returncode == 0 and d, explain(r)
    assert "NOT REAL-TIME: this run has no real-time priority" in r.stdout, explain(r)
    assert d["real_time_granted"] is False and d["real_time"]["fifo"]["granted"] is False and \
        d["real_time"]["fifo"]["error"], d["real_time"]
    s = assert_summary("without privileges", d)
    assert s["samples"] > 0, s
    dma = d["cpu_dma_latency"]
    if os.path.exists(DMA):
        assert dma["hold_zero"] is True and dma["held"] is False and dma["error"], dma
        assert "/dev/cpu_dma_latency NOT held at 0" in words(r.stdout), explain(r)


# Bad usage: exit status 2, the message, the hint; nothing run.
USAGE = [
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
    (["operand"], "unexpected argument 'operand'"),
]


@pytest.mark.parametrize("args,message", USAGE, ids=[" ".join(a) for a, _ in USAGE])
def test_bad_usage_exits_2_with_the_message_and_the_help_hint(rtmem, args, message):
    r = run(rtmem, "latency", *args)
    assert r.returncode == 2, explain(r)
    assert ("rtmem latency: " + message) in r.stderr, explain(r)
    assert "Try 'rtmem latency --help'." in r.stderr and r.stdout == "", explain(r)


# --no-rt: SCHED_OTHER, unpinned unless --cpu is given (then pinned to it).
CPU = max(os.sched_getaffinity(0))


@pytest.mark.parametrize("args,pinned", [(["--no-rt"], False),
                                         (["--no-rt", "--cpu", str(CPU)], True)],
                         ids=["--no-rt", "--no-rt --cpu LAST"])
def test_no_rt_runs_under_sched_other_pinned_only_to_the_cpu_given(rtmem, tmp_dir, args, pinned):
    path = os.path.join(tmp_dir, "n.json")
    r = run(rtmem, "latency", "--duration", "100ms", "--json", path, *args)
    assert r.returncode == 0, explain(r)
    rt = (load_json(path) or {}).get("real_time") or {}
    assert rt.get("policy") == "SCHED_OTHER" and not rt["fifo"]["requested"], rt
    assert rt["affinity"]["requested"] == pinned, rt
    assert not pinned or (rt["cpu_now"] == CPU and rt["cpus_allowed"] == 1), rt


# /dev/cpu_dma_latency: held at 0 for the run, as cyclictest holds it,
# unless --default-system; a machine without it still measures.
DMA = "/dev/cpu_dma_latency"


def words(text):
    """text with its line breaks and indents as single spaces (wrapped lines)."""
    return " ".join(text.split())


def dma_now():
    """The idle-state limit in force, in us; None if it cannot be read."""
    try:
        with open(DMA, "rb") as f:
            return int.from_bytes(f.read(4), "little", signed=True)
    except OSError:
        return None


def test_the_idle_state_limit_is_held_at_0_while_the_run_measures(rtmem, tmp_dir):
    before = dma_now()
    if before is None or os.geteuid() != 0:
        pytest.skip("%s cannot be read here, or this test is not root" % DMA)
    if before == 0:
        pytest.skip("%s is 0 already: a hold could not be told from none" % DMA)
    path = os.path.join(tmp_dir, "d.json")
    with started(rtmem, "latency", "--duration", "3", "--json", path) as p:
        # the first per-second line: the run is measuring
        out = []
        for line in p.stdout:
            out.append(line)
            if line.startswith("RTD|"):
                break
        during = dma_now()
        rest, err = p.communicate(timeout=120)
    r = subprocess.CompletedProcess(p.args, p.returncode, "".join(out) + rest, err)
    assert r.returncode == 0, explain(r)
    assert during == 0, (during, before)
    dma = load_json(path)["cpu_dma_latency"]
    assert dma == {"file": DMA, "hold_zero": True, "held": True, "machine_us": dma["machine_us"],
                   "in_force_us": 0, "error": None}, dma
    assert isinstance(dma["machine_us"], int) and dma["machine_us"] >= 0, dma
    assert DMA + " held at 0 us for the run" in words(r.stdout), explain(r)


def test_default_system_leaves_the_idle_state_limit_and_says_so(rtmem, tmp_dir):
    path = os.path.join(tmp_dir, "d.json")
    r = run(rtmem, "latency", "--duration", "100ms", "--default-system", "--json", path)
    assert r.returncode == 0, explain(r)
    dma = load_json(path)["cpu_dma_latency"]
    readable = dma_now() is not None
    assert dma["hold_zero"] is False and dma["held"] is False and dma["in_force_us"] is None \
        and (dma["error"] is None) == readable, dma
    assert (dma["machine_us"] is None) == (not readable), dma
    assert "left at the machine's setting" in words(r.stdout) and \
        "(--default-system)" in r.stdout, explain(r)


def test_a_machine_without_the_idle_state_limit_still_measures_and_says_so(rtmem, tmp_dir):
    path = os.path.join(tmp_dir, "d.json")
    r = run(rtmem, "latency", "--duration", "100ms", "--json", path,
            env={"RTMEM_LATENCY_DMA_FILE": os.path.join(tmp_dir, "none")})
    assert r.returncode == 0, explain(r)
    d = load_json(path)
    assert d["cpu_dma_latency"] == {
        "file": os.path.join(tmp_dir, "none"), "hold_zero": True, "held": False,
        "machine_us": None, "in_force_us": None, "error": "No such file or directory"}, d
    assert d["summary"]["samples"] > 0, d["summary"]
    assert "none NOT held at 0: No such file or directory" in words(r.stdout), explain(r)


def test_help_gives_the_period_and_duration_defaults(rtmem):
    # (that --help is a synopsis of the manual's options: test_docs.py)
    r = run(rtmem, "latency", "--help")
    assert "(default 1ms; bare number: us)" in r.stdout, explain(r)
    assert "(default 10s; --quick 2s)" in r.stdout, explain(r)

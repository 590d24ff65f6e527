"""The report's sections, in the page's order: one module per tool (build.py
says what a module holds)."""

from . import machine, memcheck, bench, wcet, latency, sweep, pressure, stride, bw, shm, trace, \
    replay, size, run

SECTIONS = [machine, replay, trace, size, run, memcheck, bench, wcet, latency, sweep, pressure,
            stride, bw, shm]

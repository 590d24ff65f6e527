"""Reading a trace that `rtmem trace` recorded, in Python (the format:
docs/trace-format.md; the C reader is tools/common/trace.c, and the two
agree event for event: tests/tools/test_trace.py holds them to it).

    t = tracefile.read("ctl.trace")       # TraceError if it is no trace
    t.header["pid"], t.ending, t.how, t.end_ns
    for e in t.events:                    # in the process-wide order
        e.op, e.seq, e.t_ns, e.tid, e.size, e.given, e.ret, e.align, e.mark

Standard library only: the report reads it where matplotlib is all it has.
"""

import struct

MAGIC = b"RTMTRACE"
VERSION = 1
BYTE_ORDER = 0x01020304
HEADER_BYTES = 128
END_AT = 128
MARK_MAX = 63

OPS = {1: "malloc", 2: "calloc", 3: "realloc", 4: "reallocarray", 5: "free", 6: "memalign",
       7: "posix_memalign", 8: "aligned_alloc", 9: "valloc", 10: "pvalloc",
       11: "malloc_usable_size", 12: "mark"}
ALLOCATING = {1, 2, 3, 4, 6, 7, 8, 9, 10}

# struct rtm_trace_header, rtm_trace_block, rtm_trace_end (trace_format.h)
_HEADER = "8sHHIIIQQIIIIQQQ48x"
_BLOCK = "BBHIIIIIQQQ"
_END = "QQQiIQQ"


class TraceError(Exception):
    """The file is not a trace this reader takes, or is damaged."""


class Event:
    __slots__ = ("op", "seq", "seq0", "t_ns", "tid", "size", "given", "ret", "align", "value",
                 "mark")

    def __init__(self, op, tid):
        self.op, self.tid = op, tid
        self.seq = self.seq0 = self.t_ns = self.size = self.given = self.ret = 0
        self.align = self.value = 0
        self.mark = None

    @property
    def name(self):
        return OPS.get(self.op, "?")


class Trace:
    def __init__(self):
        self.header = {}
        self.events = []
        self.ending = "no_end"  # "exited", "execed", "signaled", "no_end"
        self.how = 0
        self.end_ns = 0
        self.unrecorded = 0
        self.torn_bytes = 0


class _Cursor:
    def __init__(self, data, pos, end):
        self.data, self.pos, self.end = data, pos, end

    def u(self):
        v, shift = 0, 0
        while True:
            if self.pos >= self.end or shift >= 64:
                raise TraceError("corrupt: an event runs past its chunk")
            b = self.data[self.pos]
            self.pos += 1
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v & 0xFFFFFFFFFFFFFFFF
            shift += 7

    def p(self, prev):
        z = self.u()
        d = (z >> 1) ^ -(z & 1)
        return (prev + d) & 0xFFFFFFFFFFFFFFFF


def _events(trace, data, at, b, page):
    c = _Cursor(data, at + struct.calcsize(_BLOCK), at + struct.calcsize(_BLOCK) + b["payload"])
    seq = t = prev = 0
    out = []
    for _ in range(b["n_events"]):
        if c.pos >= c.end:
            raise TraceError("corrupt: the chunk at byte %d holds fewer events than it says" % at)
        e = Event(data[c.pos], b["tid"])
        c.pos += 1
        seq = (seq + c.u()) & 0xFFFFFFFFFFFFFFFF
        t = (t + c.u()) & 0xFFFFFFFFFFFFFFFF
        e.seq = e.seq0 = seq
        e.t_ns = t  # ticks until converted
        op = e.op
        if op in (1, 9, 10):
            e.size = c.u()
            prev = e.ret = c.p(prev)
            if op != 1:
                e.align = page
        elif op == 2:
            n = c.u()
            e.size = min(n * c.u(), 0xFFFFFFFFFFFFFFFF)
            prev = e.ret = c.p(prev)
        elif op in (3, 4):
            prev = e.given = c.p(prev)
            n = c.u() if op == 4 else 1
            e.size = min(n * c.u(), 0xFFFFFFFFFFFFFFFF)
            prev = e.ret = c.p(prev)
            e.seq0 = e.seq - c.u()
            if e.seq0 < 0:
                raise TraceError("corrupt: a realloc's seq0 after its seq")
        elif op == 5:
            prev = e.given = c.p(prev)
        elif op in (6, 8):
            e.align = c.u()
            e.size = c.u()
            prev = e.ret = c.p(prev)
        elif op == 7:
            e.align = c.u()
            e.size = c.u()
            prev = e.ret = c.p(prev)
            e.value = c.u()
        elif op == 11:
            prev = e.given = c.p(prev)
            e.value = c.u()
        elif op == 12:
            n = c.u()
            if n > MARK_MAX or c.pos + n > c.end:
                raise TraceError("corrupt: an event runs past its chunk")
            e.mark = data[c.pos:c.pos + n].decode("utf-8", "replace")
            c.pos += n
        else:
            raise TraceError("corrupt: unknown operation %d in the chunk at byte %d" % (op, at))
        out.append(e)
    return out


def read(path):
    """The trace at path (a Trace), or TraceError saying why not."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise TraceError("cannot open %s: %s" % (path, e.strerror))
    if len(data) < HEADER_BYTES or data[:8] != MAGIC:
        raise TraceError("%s is not an rtmem trace (no %s at its start)" % (path, MAGIC.decode()))
    fields = struct.unpack_from("=" + _HEADER, data, 0)
    if fields[3] != BYTE_ORDER:
        other = ">" if struct.pack("=I", 1) == struct.pack("<I", 1) else "<"
        if struct.unpack_from(other + _HEADER, data, 0)[3] == BYTE_ORDER:
            raise TraceError("%s was written on a machine of the other byte order: read it there"
                             % path)
        raise TraceError("corrupt: %s has no byte-order mark" % path)
    names = ("magic", "version", "header_bytes", "byte_order", "pid", "ppid", "start_ns",
             "start_real_ns", "page_bytes", "generation", "chunk_bytes", "clock", "start_ticks",
             "calib_ns", "calib_ticks")
    h = dict(zip(names, fields))
    if h["version"] != VERSION:
        raise TraceError("%s is an rtmem trace of format version %d, this reader reads %d"
                         % (path, h["version"], VERSION))
    page, chunk = h["page_bytes"], h["chunk_bytes"]
    if (h["header_bytes"] != HEADER_BYTES or page < 4096 or page > 1 << 20 or page & (page - 1)
            or not chunk or chunk % page or chunk > 64 << 20 or h["clock"] not in (0, 1)):
        raise TraceError("corrupt: %s's header does not hold together" % path)
    t = Trace()
    t.header = h
    far = [0, 0]  # ticks and ns since the start, the pair farthest from it

    def pair(ticks, ns):
        if ticks > h["start_ticks"] and ns > h["start_ns"] and \
                ticks - h["start_ticks"] > far[0]:
            far[0], far[1] = ticks - h["start_ticks"], ns - h["start_ns"]

    pair(h["calib_ticks"], h["calib_ns"])
    bsize, esize = struct.calcsize(_BLOCK), struct.calcsize(_END)
    if len(data) >= END_AT + bsize + esize and data[END_AT]:
        btype = data[END_AT]
        b = struct.unpack_from("=" + _BLOCK, data, END_AT)
        if btype not in (2, 3) or b[4] != esize:
            raise TraceError("corrupt: the end block (byte %d) is not one" % END_AT)
        end_ns, _chunks, unrec, how, _r, end_ticks, _r2 = struct.unpack_from(
            "<" + _END, data, END_AT + bsize)
        t.end_ns, t.unrecorded, t.how = end_ns, unrec, how
        t.ending = "signaled" if btype == 3 else "execed" if how == -2 else "exited"
        pair(end_ticks, h["start_ns"] + end_ns)
    events = []
    at = page
    while at < len(data):
        room = min(chunk, len(data) - at)
        if room < bsize:
            if any(data[at:at + room]):
                t.torn_bytes += room
            break
        (btype, _r8, _r16, space, payload, n_events, tid, _r32, _first, ticks,
         ns) = struct.unpack_from("=" + _BLOCK, data, at)
        if btype == 0:  # reserved by a process that died before it published its header
            at += chunk
            continue
        if btype != 1:
            raise TraceError("corrupt: a chunk of type %d at byte %d" % (btype, at))
        if space != chunk - bsize or payload > space or n_events * 3 > payload:
            raise TraceError("corrupt: the chunk at byte %d says it holds %d bytes in %d of room"
                             % (at, payload, space))
        if room < chunk and payload > room - bsize:
            t.torn_bytes += room
            break
        pair(ticks, ns)
        events += _events(t, data, at, {"payload": payload, "n_events": n_events, "tid": tid},
                          page)
        at += chunk
    if h["clock"] == 1:
        rate = far[1] / far[0] if far[0] else 0.0
        for e in events:
            e.t_ns = int(e.t_ns * rate)
    events.sort(key=lambda e: e.seq)
    kept = []
    for e in events:
        if kept and kept[-1].seq == e.seq:
            continue
        kept.append(e)
    t.events = kept
    if t.ending == "no_end":
        t.end_ns = kept[-1].t_ns if kept else 0
    return t


def live_bytes(trace):
    """(peak, its time in ns, series): the bytes asked by live blocks at
    their most, and [(t_ns, live bytes)] after each allocation or free, as
    rtmem trace --show counts them (a realloc's old block leaves the map of
    addresses at its seq0)."""
    ev = trace.events
    order = sorted((i for i, e in enumerate(ev) if e.op in (3, 4) and e.given),
                   key=lambda i: ev[i].seq0)
    live, taken, nxt = {}, {}, 0
    total, peak, peak_t, series = 0, 0, 0, []
    for i, e in enumerate(ev):
        while nxt < len(order) and ev[order[nxt]].seq0 < e.seq:
            j = order[nxt]
            nxt += 1
            if ev[j].given in live:
                taken[j] = live.pop(ev[j].given)
        if e.op in (11, 12):
            continue
        if e.op == 5 and e.given:
            total -= live.pop(e.given, 0)
        elif e.op in (3, 4) and e.given:
            old = taken.pop(i, None)
            if e.ret or e.size == 0:
                total -= old or 0
            elif old is not None:
                live[e.given] = old  # a failed realloc leaves its block
        if e.op in ALLOCATING and e.ret:
            if e.ret in live:
                total -= live[e.ret]
            live[e.ret] = e.size
            total += e.size
            if total > peak:
                peak, peak_t = total, e.t_ns
        series.append((e.t_ns, total))
    return peak, peak_t, series

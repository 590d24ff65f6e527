"""Result files as the sections read them.

A tool's JSON document (docs/json.md) is read once and handed to the
sections as a Doc. A section reads members through Obj and Arr, which know
where in the file they are: a member that is missing or of the wrong type
raises Malformed naming the file and the member's path
("results/bench.json: sweep.allocators[2].alloc_avg_ns: missing"), so that
a malformed file is a clear error, never a traceback or a wrong plot.
"""

import json
import math
import os


class Malformed(Exception):
    """A result file that cannot be read as its schema says."""


def is_number(v):
    """An int or a float (never a bool) that a plot can take: finite and
    within a float's range."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(float(v)) and abs(float(v)) < 1e300
    except OverflowError:
        return False


class Obj:
    """A JSON object at a known path of a known file."""

    def __init__(self, value, path, where):
        self._v = value
        self._path = path
        self._where = where

    def _fail(self, key, what):
        raise Malformed("%s: %s: %s" % (self._where, self._sub(key), what))

    def _sub(self, key):
        return "%s.%s" % (self._path, key) if self._path else str(key)

    def has(self, key):
        return key in self._v and self._v[key] is not None

    def raw(self, key, default=None):
        return self._v.get(key, default)

    def keys(self):
        return list(self._v.keys())

    def _get(self, key, nullable):
        if key not in self._v:
            self._fail(key, "missing")
        v = self._v[key]
        if v is None and not nullable:
            self._fail(key, "null where a value is required")
        return v

    def num(self, key, nullable=False):
        """A number (an int or a float, never a bool); None if nullable and
        null."""
        v = self._get(key, nullable)
        if v is None:
            return None
        if not is_number(v):
            self._fail(key, "not a number: %.40r" % (v,))
        return v

    def str(self, key, nullable=False):
        v = self._get(key, nullable)
        if v is not None and not isinstance(v, str):
            self._fail(key, "not a string: %r" % (v,))
        return v

    def bool(self, key, nullable=False):
        v = self._get(key, nullable)
        if v is not None and not isinstance(v, bool):
            self._fail(key, "not true or false: %r" % (v,))
        return v

    def obj(self, key, nullable=False):
        v = self._get(key, nullable)
        if v is None:
            return None
        if not isinstance(v, dict):
            self._fail(key, "not an object")
        return Obj(v, self._sub(key), self._where)

    def arr(self, key, nullable=False):
        v = self._get(key, nullable)
        if v is None:
            return None
        if not isinstance(v, list):
            self._fail(key, "not an array")
        return Arr(v, self._sub(key), self._where)


class Arr:
    """A JSON array at a known path of a known file."""

    def __init__(self, value, path, where):
        self._v = value
        self._path = path
        self._where = where

    def __len__(self):
        return len(self._v)

    def _at(self, i):
        return "%s[%d]" % (self._path, i)

    def objs(self):
        """Its elements, each an Obj (an element that is not fails)."""
        out = []
        for i, v in enumerate(self._v):
            if not isinstance(v, dict):
                raise Malformed("%s: %s: not an object" % (self._where, self._at(i)))
            out.append(Obj(v, self._at(i), self._where))
        return out

    def nums(self, nullable=False):
        out = []
        for i, v in enumerate(self._v):
            if v is None and nullable:
                out.append(None)
                continue
            if not is_number(v):
                raise Malformed("%s: %s: not a number: %.40r" % (self._where, self._at(i), v))
            out.append(v)
        return out

    def strs(self):
        for i, v in enumerate(self._v):
            if not isinstance(v, str):
                raise Malformed("%s: %s: not a string: %r" % (self._where, self._at(i), v))
        return list(self._v)

    def rows(self):
        """Its elements, each an array (of anything: the caller checks)."""
        for i, v in enumerate(self._v):
            if not isinstance(v, list):
                raise Malformed("%s: %s: not an array" % (self._where, self._at(i)))
        return self._v


class Doc(Obj):
    """One result file: its path (as given), schema name and version, and
    the document."""

    def __init__(self, path, value):
        super().__init__(value, "", path)
        self.path = path
        self.name = os.path.basename(path)
        schema = self.str("schema")
        tool, sep, version = schema.partition("/")
        if not tool.startswith("rtmem-") or not sep or not version.isascii() or \
                not version.isdigit() or len(version) > 6:
            raise Malformed("%s: schema: not rtmem-<tool>/<N>: %r" % (path, schema))
        self.schema = schema
        self.tool = tool[len("rtmem-"):]
        self.version = int(version)
        # The envelope as docs/json.md gives it; a document of an older
        # layout may lack it (it is then only named, never drawn).
        passed = value.get("passed")
        self.passed = passed if isinstance(passed, bool) else None
        command = value.get("command_line")
        self.command = [a for a in command if isinstance(a, str)] \
            if isinstance(command, list) else []
        seconds = value.get("seconds")
        self.seconds = seconds if isinstance(seconds, (int, float)) and \
            not isinstance(seconds, bool) else None


    def check_envelope(self):
        """Malformed unless the envelope of docs/json.md is whole: what a
        document of the version a section reads must have."""
        self.str("tool")
        self.str("version")
        self.arr("command_line").strs()
        self.obj("machine")
        self.obj("timer", nullable=True)  # null: a tool that times nothing (rtmem trace)
        self.obj("real_time", nullable=True)
        self.num("seconds")
        self.bool("passed")


def read(path):
    """The Doc at path; None if it is JSON that is no rtmem result (no
    `schema` member naming rtmem-...). Malformed if it is not JSON, or an
    rtmem result without the envelope."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Malformed("%s: cannot read: %s" % (path, e.strerror or e))
    try:
        value = json.loads(data)
    except UnicodeDecodeError as e:
        raise Malformed("%s: not UTF-8 text (byte %d)" % (path, e.start))
    except ValueError as e:
        raise Malformed("%s: not valid JSON: %s" % (path, e))
    except RecursionError:
        raise Malformed("%s: nested too deeply to be a result file" % path)
    if not isinstance(value, dict):
        return None
    schema = value.get("schema")
    if not isinstance(schema, str) or not schema.startswith("rtmem-"):
        return None
    return Doc(path, value)

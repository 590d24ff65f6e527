"""The report directory, written so that a failed or interrupted run leaves
it as it was.

Every file is written to a new temporary file in the directory (created
exclusively, under a name no other file has) and renamed into place only
when the whole report is made, index.html last, with SIGINT and SIGTERM
held off while the files are renamed. The directory keeps a list of what
rtmem report wrote there (.rtmem-report); a later run replaces those
files, removes those it no longer writes, and never touches any other
file: only index.html and the plots' names (<section>-<name>.png) are ever
taken from the list, and a file of such a name that is not on it stops the
run before anything is written. A directory the run created is removed
again if the run fails.
"""

import contextlib
import os
import re
import signal
import tempfile

MANIFEST = ".rtmem-report"
MARK = "rtmem report manifest 1"

# While a file is being made and recorded, or the report put in place, a
# signal waits: cli.py's handler asks held() and, if so, defers it here.
# Masking the signal alone is not enough: a process-wide signal can reach
# another thread (numpy's, matplotlib's), and Python then runs the handler
# in this one at its next instruction, masked or not.
_hold = [0]
_deferred = []


def held():
    return _hold[0] > 0


def defer(signum):
    _deferred.append(signum)


@contextlib.contextmanager
def signals_held():
    held_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    _hold[0] += 1
    try:
        yield
    finally:
        _hold[0] -= 1
        signal.pthread_sigmask(signal.SIG_SETMASK, held_mask)
        if _hold[0] == 0 and _deferred:
            signum = _deferred[0]
            del _deferred[:]
            os.kill(os.getpid(), signum)  # again, now that it may end the run


class OutputError(Exception):
    pass


class Output:
    def __init__(self, directory, anchors):
        self.dir = directory
        self.created = False
        self.staged = []  # (temporary path, final name)
        self._plot = re.compile(r"^(%s)-[A-Za-z0-9_.-]+\.png$" % "|".join(
            re.escape(a) for a in anchors))
        self.previous = self._read_manifest()

    def ours(self, name):
        """A name rtmem report writes: index.html or one of its plots."""
        return name == "index.html" or bool(self._plot.match(name))

    def _read_manifest(self):
        path = os.path.join(self.dir, MANIFEST)
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return set()
        except (OSError, UnicodeDecodeError) as e:
            raise OutputError("%s: cannot read: %s" % (path, getattr(e, "strerror", e)))
        if not lines or lines[0] != MARK:
            raise OutputError("%s is not rtmem report's list of its files; "
                              "choose another directory" % path)
        # Only names this tool writes: a list edited by hand can make it
        # replace or remove nothing else.
        return set(n for n in lines[1:] if self.ours(n))

    def open(self):
        """Creates the directory if it does not exist (a file there stops)."""
        if os.path.isdir(self.dir):
            return
        if os.path.lexists(self.dir):
            raise OutputError("%s exists and is not a directory" % self.dir)
        try:
            os.mkdir(self.dir)  # its parent must exist: nothing else is made
        except OSError as e:
            raise OutputError("cannot create %s: %s" % (self.dir, e.strerror))
        self.created = True

    def check_names(self, names):
        """Refuses to write over a file this tool did not write."""
        for name in names:
            path = os.path.join(self.dir, name)
            if os.path.lexists(path) and name not in self.previous:
                raise OutputError("%s exists and was not written by rtmem report; "
                                  "move it or choose another directory" % path)

    def _temporary(self, name):
        """A new file in the directory for name's content: its path."""
        # SIGINT and SIGTERM held between the file's making and its record:
        # their handler raises, and a file made but not yet recorded would
        # outlive abandon()
        with signals_held():
            fd, tmp = tempfile.mkstemp(prefix=".%s." % name, suffix=".tmp", dir=self.dir)
            self.staged.append((tmp, name))
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)  # as an ordinary new file, not mkstemp's 0600
        os.close(fd)
        return tmp

    def stage(self, name):
        """The temporary path to write name to."""
        if not self.ours(name):
            raise ValueError(name)
        if any(n == name for _, n in self.staged):
            raise ValueError("written twice: " + name)
        self.check_names([name])
        return self._temporary(name)

    def write_text(self, name, text):
        tmp = self.stage(name)
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())

    def _write_manifest(self, names):
        tmp = self._temporary(MANIFEST)
        with open(tmp, "w") as f:
            f.write(MARK + "\n" + "".join(n + "\n" for n in sorted(names)))
        os.replace(tmp, os.path.join(self.dir, MANIFEST))
        self.staged = [s for s in self.staged if s[0] != tmp]

    def commit(self):
        """Puts every staged file in place: first the list of files (the
        old ones and the new), then the plots, the page last; then removes
        the files the last run wrote that this one did not, and lists only
        this run's. SIGINT and SIGTERM wait until it is done."""
        names = [n for _, n in self.staged]
        self.check_names(names)
        with signals_held():
            self._write_manifest(set(names) | self.previous)
            for tmp, name in sorted(self.staged, key=lambda s: s[1] == "index.html"):
                os.replace(tmp, os.path.join(self.dir, name))
            self.staged = []
            for name in sorted(self.previous - set(names)):
                try:
                    os.unlink(os.path.join(self.dir, name))
                except FileNotFoundError:
                    pass
            self._write_manifest(names)
            self.previous = set(names)
            self.created = False

    def abandon(self):
        """Removes the temporary files this run made, and the directory if
        this run made it and it is empty again."""
        for tmp, _ in self.staged:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        self.staged = []
        if self.created:
            try:
                os.rmdir(self.dir)
            except OSError:
                pass
            self.created = False

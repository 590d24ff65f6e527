"""The report directory, written so that a failed or interrupted run leaves
it as it was.

Every file is written under a temporary name in the directory
(.NAME.tmp-PID) and renamed into place only when the whole report is
made, index.html last. The directory keeps a list of what rtmem report
wrote there (.rtmem-report); a later run replaces those files, removes
those it no longer writes, and never touches any other file: a file of the
same name that rtmem report did not write stops the run before anything is
written. A directory the run created is removed again if the run fails.
"""

import os

MANIFEST = ".rtmem-report"
MARK = "rtmem report manifest 1"


class OutputError(Exception):
    pass


def _ours(name):
    """A name rtmem report writes: index.html or a plot."""
    return name == "index.html" or (name.endswith(".png") and "/" not in name and
                                    not name.startswith("."))


class Output:
    def __init__(self, directory):
        self.dir = directory
        self.created = False
        self.staged = []  # (temporary path, final name)
        self.previous = self._read_manifest()

    def _read_manifest(self):
        path = os.path.join(self.dir, MANIFEST)
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return set()
        except OSError as e:
            raise OutputError("%s: cannot read: %s" % (path, e.strerror))
        if not lines or lines[0] != MARK:
            raise OutputError("%s is not rtmem report's list of its files; "
                              "choose another directory" % path)
        # Only names this tool writes: a list edited by hand can make it
        # replace or remove nothing else.
        return set(n for n in lines[1:] if _ours(n))

    def open(self):
        """Creates the directory if it does not exist (a file there stops)."""
        if os.path.isdir(self.dir):
            return
        if os.path.lexists(self.dir):
            raise OutputError("%s exists and is not a directory" % self.dir)
        try:
            os.makedirs(self.dir)
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

    def stage(self, name):
        """The temporary path to write name to."""
        if not _ours(name):
            raise ValueError(name)
        if any(n == name for _, n in self.staged):
            raise ValueError("written twice: " + name)
        self.check_names([name])
        tmp = os.path.join(self.dir, ".%s.tmp-%d" % (name, os.getpid()))
        self.staged.append((tmp, name))
        return tmp

    def write_text(self, name, text):
        tmp = self.stage(name)
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())

    def commit(self):
        """Renames every staged file into place (index.html last), then
        writes the manifest and removes the files the last run wrote that
        this one did not."""
        names = [n for _, n in self.staged]
        self.check_names(names)
        manifest_tmp = os.path.join(self.dir, ".%s.tmp-%d" % (MANIFEST, os.getpid()))
        with open(manifest_tmp, "w") as f:
            f.write(MARK + "\n" + "".join(n + "\n" for n in sorted(set(names) | self.previous)))
        self.staged.append((manifest_tmp, MANIFEST))
        # The manifest first (it lists the old files and the new), the page last.
        order = sorted(self.staged,
                       key=lambda s: 0 if s[1] == MANIFEST else (2 if s[1] == "index.html" else 1))
        for tmp, name in order:
            os.replace(tmp, os.path.join(self.dir, name))
        self.staged = []
        for name in sorted(self.previous - set(names)):
            try:
                os.unlink(os.path.join(self.dir, name))
            except FileNotFoundError:
                pass
        with open(manifest_tmp, "w") as f:
            f.write(MARK + "\n" + "".join(n + "\n" for n in sorted(names)))
        os.replace(manifest_tmp, os.path.join(self.dir, MANIFEST))

    def abandon(self):
        """Removes the temporary files, and the directory if this run made
        it and it is empty again."""
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

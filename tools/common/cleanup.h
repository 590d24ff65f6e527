/*
 * Bench kit: what a fatal signal must undo before the process dies.
 *
 * A tool that is interrupted (Ctrl-C, kill, a closed pipe, a lost terminal)
 * must leave nothing of its own behind and must not touch anything else: the
 * temporary result files it created are unlinked, the child processes it
 * started (each the leader of its own process group) are killed with their
 * groups and reaped, then the POSIX shared memory objects they or it may
 * have made are removed, and last the temporary directories it made, once
 * the files registered in them are gone. Then the signal is raised again with its default
 * action, so the tool dies of it as it would have without the handler (a
 * shell sees 130 for SIGINT).
 *
 * Handled: SIGHUP, SIGINT, SIGQUIT, SIGPIPE and SIGTERM, each only if it was
 * not ignored when the process started (nohup and background jobs ignore
 * some on purpose). SIGKILL cannot be handled: a temporary file can then
 * stay behind, named after its target with a leading '.'.
 *
 * The handler acts only in the process that registered the entries: a child
 * inherits the handler after fork but never cleans up its parent's files.
 *
 * Registration is bounded (TK_CLEANUP_FILES files, TK_CLEANUP_CHILDREN
 * children, TK_CLEANUP_SHM shm objects, TK_CLEANUP_DIRS directories at
 * once); every entry is a copy, written before it is marked used, so the
 * handler never reads half of one. Register and create (or
 * fork) with the signals blocked (tk_cleanup_block), so that no signal
 * falls between the two.
 */
#ifndef RTMEM_TOOLS_CLEANUP_H
#define RTMEM_TOOLS_CLEANUP_H

#include <signal.h>
#include <sys/types.h>

/* Files: a result file's temporary, and rtmem shm --java's (java.c): the
 * job's file, the compiled class, the JVM's warm-up file and crash log. */
#define TK_CLEANUP_FILES    8
#define TK_CLEANUP_CHILDREN 4
#define TK_CLEANUP_SHM      2
#define TK_CLEANUP_DIRS     2

/* Installs the handler (once; later calls do nothing). */
void tk_cleanup_install(void);

/* Blocks the handled signals, saving the previous mask in *old; restores
 * it. */
void tk_cleanup_block(sigset_t *old);
void tk_cleanup_restore(const sigset_t *old);

/* A file this process created, to unlink on a fatal signal. Returns the
 * entry's slot, or -1 if the table is full or the path too long. */
int tk_cleanup_add_file(const char *path);
/* Forgets a slot from tk_cleanup_add_file (-1: nothing). */
void tk_cleanup_forget_file(int slot);

/* A child of this process that leads its own process group, to kill
 * (SIGKILL to the group) and reap on a fatal signal, with every other child
 * of this process in that group (a group of workers: pressure.h). Forget it
 * once every child in the group is reaped: the group's id is then free for
 * another. Returns the slot, or -1 if the table is full. */
int tk_cleanup_add_child(pid_t pid);
/* Forgets a slot from tk_cleanup_add_child (-1: nothing), once the child
 * is reaped. */
void tk_cleanup_forget_child(int slot);

/* A POSIX shared memory object (its shm_open name, "/..."), which this
 * process or its children may create, to shm_unlink on a fatal signal once
 * the children are killed and reaped (so none can make it again). Only
 * names that belong to this run: whatever holds the name then is removed.
 * Returns the slot, or -1 if the table is full or the name too long.
 * (shm_unlink is not on POSIX's list of async-signal-safe calls; glibc's
 * builds the path on the stack and calls unlink, which is.) */
int tk_cleanup_add_shm(const char *shm_name);
/* Forgets a slot from tk_cleanup_add_shm (-1: nothing). */
void tk_cleanup_forget_shm(int slot);

/* A directory this process made (mkdtemp), to rmdir on a fatal signal after
 * the files above are unlinked: register every file made in it, or the
 * rmdir fails and the directory stays. Returns the slot, or -1 if the
 * table is full or the path too long. */
int tk_cleanup_add_dir(const char *path);
/* A directory this process made and handed to another program as its
 * scratch space (valgrind's TMPDIR), which may leave files there under
 * names this process cannot know: on a fatal signal every entry in it is
 * unlinked, then the directory removed. Only flat directories: an entry
 * that is itself a directory stays, and so does the directory. Forget it
 * with tk_cleanup_forget_dir. */
int tk_cleanup_add_scratch_dir(const char *path);
/* Forgets a slot from tk_cleanup_add_dir (-1: nothing). */
void tk_cleanup_forget_dir(int slot);

/* Unlinks every entry of the directory at path (not recursing) and removes
 * it: what the handler does for a scratch directory, for the normal path.
 * Async-signal-safe. Returns 0, or -1 with errno set if the directory
 * stays. */
int tk_cleanup_remove_scratch_dir(const char *path);

#endif /* RTMEM_TOOLS_CLEANUP_H */

/*
 * `rtmem shm`: the header, the tables (times, faults, page sizes, the
 * second process), the skipped mechanisms with their reasons, the
 * --duration summary, the JSON and the envelope's facts.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "common/opt.h"
#include "common/tool.h"
#include "java.h"
#include "shm.h"

/* The row whose writes the others are set against: SysV shm, the study's
 * fastest at 1 GiB. */
#define REFERENCE "sysv"

static const char *const phase_ids[SHM_PHASES] = {
    [SHM_PHASE_TOUCH] = "touch",       [SHM_PHASE_WRITES] = "writes",
    [SHM_PHASE_ZEROINGS] = "zeroings", [SHM_PHASE_SYNC] = "sync",
    [SHM_PHASE_TEARDOWN] = "teardown",
};

/* A page size as an option writes it ("4K", "2M", "1G"); "?" unknown. */
static const char *fmt_page(char *buf, size_t size, uint64_t bytes)
{
    return bytes ? tk_opt_fmt_bytes(buf, size, bytes) : "?";
}

static double per_op(const struct shm_phase *ph)
{
    return ph->done && ph->ops ? ph->ns / (double)ph->ops : NAN;
}

/* The store's own cost per write (shm_net_per_write) to two decimals with
 * its precision (shm_net_precision), "0.42~0.05"; "<0.05" where it is
 * within its precision of 0 (never a clamped 0); "-0.47~0.09!" where it is
 * below minus its precision (shm_net_inconsistent: the note under the
 * table says why); "0.42~?" where the precision is not known, "-" where
 * the net is not. */
static const char *fmt_net(char *buf, size_t size, const struct shm_row *r)
{
    double net = shm_net_per_write(r), p = shm_net_precision(r);
    if (isnan(net))
        snprintf(buf, size, "-");
    else if (isnan(p))
        snprintf(buf, size, "%.2f~?", net);
    else if (shm_net_inconsistent(r))
        snprintf(buf, size, "%.2f~%.2f!", net, p);
    else if (net <= p)
        snprintf(buf, size, "<%.2f", p < 0.005 ? 0.01 : p);
    else
        snprintf(buf, size, "%.2f~%.2f", net, p);
    return buf;
}

/* Bytes of the region that transparent huge pages map. */
static uint64_t thp_bytes(const struct shm_row *row)
{
    const struct tk_smaps_entry *e = &row->pages.smaps;
    return e->anon_huge_bytes + e->shmem_pmd_bytes + e->file_pmd_bytes;
}

static const struct shm_row *reference_row(const struct shm *sh, uint64_t bytes)
{
    for (size_t i = 0; i < sh->n_rows; i++)
        if (sh->rows[i].bytes == bytes && strcmp(sh->rows[i].mech, REFERENCE) == 0 &&
            !sh->rows[i].skipped)
            return &sh->rows[i];
    return NULL;
}

void shm_print_header(FILE *f, const struct shm *sh)
{
    char b[32];
    fprintf(f, "rtmem shm: shared-memory mechanisms on the same workloads\n");
    tk_machine_print(f, &sh->mf);
    tk_timer_print(f, "timer: ", &sh->timer, TK_DETAIL_BRIEF);
    tk_rt_print(f, &sh->rt);
    if (sh->o.generator == SHM_GEN_RAND)
        fprintf(f, "generator  : rand() %% bytes (srand %" PRIu64 "), value the index's low byte\n",
                sh->o.seed);
    else
        fprintf(f,
                "generator  : splitmix64, index ((z >> 32) * bytes) >> 32, value z & 0xff, "
                "seed %" PRIu64 "\n",
                sh->o.seed);
    if (!sh->o.duration_ns)
        fprintf(f,
                "             alone: %.2f ns per draw, the median of %d runs of %" PRIu64
                " draws (interquartile range %.2f ns);\n"
                "             the writes are timed whole, generator included; their net (the "
                "store alone) is\n"
                "             their median slice less %.2f ns, known to within (~) the "
                "interquartile ranges of both\n",
                sh->rng_ns_per_write, SHM_RNG_TRIALS, sh->rng_draws, sh->rng_spread_ns,
                sh->rng_ns_per_write);
    if (sh->o.duration_ns)
        fprintf(f, "mode       : --duration %.0f s per region\n", (double)sh->o.duration_ns / 1e9);
    else
        fprintf(f, "workloads  : %s%" PRIu64 " writes%s, %s zeroings, per region; %u process%s\n",
                sh->writes_given ? "" : "up to ", sh->o.writes,
                sh->writes_given ? "" : " (cut at --budget)",
                sh->zeroings_given ? "the given" : "budgeted (at least 3)", sh->o.processes,
                sh->o.processes > 1 ? "es" : "");
    fprintf(f, "--dir      : %s (%s)%s\n", sh->o.dir, sh->dir_fs,
            strcmp(sh->dir_fs, "tmpfs") == 0 ? ": NOT a disk, file-disk is a tmpfs file here" : "");
    fprintf(f,
            "kernel     : THP %s, shmem THP %s; writeback every %.1f s of pages dirty for "
            "%.1f s; MemAvailable %s\n",
            sh->thp_mode, sh->shmem_thp_mode, (double)sh->dirty_writeback_cs / 100,
            (double)sh->dirty_expire_cs / 100,
            tk_fmt_iec(b, sizeof(b), sh->mem_available / MIB * MIB));
    fprintf(f, "\n");
}

/* The mechanism column's width: the longest name ("java:tmpfs:direct"), 13 at least. */
static int mech_width(const struct shm *sh)
{
    size_t w = 13;
    for (size_t i = 0; i < sh->n_rows; i++)
        if (strlen(sh->rows[i].mech) > w)
            w = strlen(sh->rows[i].mech);
    return (int)w;
}

static void print_times(FILE *f, const struct shm *sh)
{
    int mw = mech_width(sh);
    fprintf(f, "%-*s %8s %4s %5s %9s %8s %7s %10s %13s %8s %9s %9s\n", mw, "mechanism", "size",
            "page", "thp%", "touch us", "us/page", "write", "vs " REFERENCE, "net write", "zero us",
            "sync ms", "close ms");
    fprintf(f, "%-*s %8s %4s %5s %9s %8s %7s %10s %13s %8s %9s %9s\n", mw, "", "", "", "",
            "(total)", "", "ns", "", "ns", "(each)", "", "");
    for (size_t i = 0; i < sh->n_rows; i++) {
        const struct shm_row *r = &sh->rows[i];
        char size[32], page[16], c[9][TK_FMT_MAX], net[2 * TK_FMT_MAX];
        tk_fmt_iec(size, sizeof(size), r->bytes);
        if (r->skipped) {
            fprintf(f, "%-*s %8s  skipped (below)\n", mw, r->mech, size);
            continue;
        }
        const struct shm_row *ref = reference_row(sh, r->bytes);
        double w = per_op(&r->phase[SHM_PHASE_WRITES]);
        double ref_w = ref ? per_op(&ref->phase[SHM_PHASE_WRITES]) : NAN;
        double thp = r->pages.read && r->mapped_bytes
                         ? 100.0 * (double)thp_bytes(r) / (double)r->mapped_bytes
                         : NAN;
        fprintf(f, "%-*s %8s %4s %5s %9s %8s %6s%s %10s %13s %8s %9s %9s%s\n", mw, r->mech, size,
                fmt_page(page, sizeof(page), r->pages.smaps.kernel_page_bytes),
                tk_fmt_double(c[0], sizeof(c[0]), thp, 0),
                tk_fmt_double(c[1], sizeof(c[1]), r->phase[SHM_PHASE_TOUCH].ns / 1e3, 1),
                tk_fmt_double(c[2], sizeof(c[2]), per_op(&r->phase[SHM_PHASE_TOUCH]) / 1e3, 3),
                tk_fmt_double(c[3], sizeof(c[3]), w, 2), r->writes_capped ? "*" : " ",
                tk_fmt_ratio(c[4], sizeof(c[4]), w / ref_w), fmt_net(net, sizeof(net), r),
                tk_fmt_double(c[5], sizeof(c[5]), per_op(&r->phase[SHM_PHASE_ZEROINGS]) / 1e3, 1),
                tk_fmt_double(
                    c[6], sizeof(c[6]),
                    r->phase[SHM_PHASE_SYNC].done ? r->phase[SHM_PHASE_SYNC].ns / 1e6 : NAN, 2),
                tk_fmt_double(c[7], sizeof(c[7]), r->phase[SHM_PHASE_TEARDOWN].ns / 1e6, 2),
                r->failed ? "  FAILED" : "");
    }
}

static void print_faults(FILE *f, const struct shm *sh)
{
    int w = mech_width(sh);
    fprintf(f, "\npage faults of the writing thread, minor/major, per phase\n");
    fprintf(f, "%-*s %8s %14s %14s %14s %14s %14s %10s %9s\n", w, "mechanism", "size", "touch",
            "writes", "zeroings", "sync", "teardown", "writes", "zeroings");
    fprintf(f, "%-*s %8s %14s %14s %14s %14s %14s %10s %9s\n", w, "", "", "", "", "", "", "",
            "done", "done");
    for (size_t i = 0; i < sh->n_rows; i++) {
        const struct shm_row *r = &sh->rows[i];
        if (r->skipped)
            continue;
        char size[32], c[SHM_PHASES][48];
        for (int p = 0; p < SHM_PHASES; p++) {
            const struct shm_phase *ph = &r->phase[p];
            if (ph->done)
                snprintf(c[p], sizeof(c[p]), "%" PRIu64 "/%" PRIu64, ph->minor_faults,
                         ph->major_faults);
            else
                snprintf(c[p], sizeof(c[p]), "-");
        }
        fprintf(f, "%-*s %8s %14s %14s %14s %14s %14s %10" PRIu64 " %9" PRIu64 "\n", w, r->mech,
                tk_fmt_iec(size, sizeof(size), r->bytes), c[0], c[1], c[2], c[3], c[4],
                r->phase[SHM_PHASE_WRITES].ops, r->phase[SHM_PHASE_ZEROINGS].ops);
    }
}

static void print_readers(FILE *f, const struct shm *sh)
{
    int w = mech_width(sh);
    fprintf(f, "\nthe second process: attach, first touch of every page (read), contents\n");
    fprintf(f, "%-*s %8s %-10s %10s %8s %14s  %s\n", w, "mechanism", "size", "attach", "touch us",
            "us/page", "faults", "contents");
    for (size_t i = 0; i < sh->n_rows; i++) {
        const struct shm_row *r = &sh->rows[i];
        if (r->skipped)
            continue;
        const struct shm_reader *d = &r->reader;
        char size[32], c[2][TK_FMT_MAX], faults[48];
        tk_fmt_iec(size, sizeof(size), r->bytes);
        if (!d->done) {
            fprintf(f, "%-*s %8s %s\n", w, r->mech, size, d->why);
            continue;
        }
        snprintf(faults, sizeof(faults), "%" PRIu64 "/%" PRIu64, d->minor_faults, d->major_faults);
        fprintf(f, "%-*s %8s %-10s %10s %8s %14s  %s\n", w, r->mech, size,
                d->by_name ? "by name" : "inherited",
                tk_fmt_double(c[0], sizeof(c[0]), d->touch_ns / 1e3, 1),
                tk_fmt_double(c[1], sizeof(c[1]),
                              d->pages ? d->touch_ns / 1e3 / (double)d->pages : NAN, 3),
                faults, d->matched ? "as written" : "DIFFERENT");
    }
}

/* Row i's mechanism was skipped at an earlier size too: said once. */
static bool said_before(const struct shm *sh, size_t i)
{
    const struct shm_row *r = &sh->rows[i];
    if (!r->skipped)
        return false;
    for (size_t k = 0; k < i; k++)
        if (sh->rows[k].skipped && strcmp(sh->rows[k].mech, r->mech) == 0)
            return true;
    return false;
}

/* What each Java fill is, and its rows, for the notes. */
static const char *java_fills(char *buf, size_t size, const struct shm *sh)
{
    static const char *const what[SHM_JAVA_ZERO_N] = {
        "put(int, byte[]) from a zeroed 64 KiB array",
        "put(int, ByteBuffer) from a zeroed 64 KiB direct buffer",
        "putLong(int, 0) over every 8 bytes, a bulk fill",
        "sun.misc.Unsafe.setMemory (no public API)",
        "put((byte) 0) on every byte, one at a time, the published comparison's loop",
    };
    unsigned fills = sh->o.java_zero ? sh->o.java_zero : 1u << SHM_JAVA_ZERO_LONGS;
    size_t len = 0;
    buf[0] = '\0';
    for (int m = 0; m < SHM_JAVA_ZERO_N && len < size; m++) {
        if (!(fills & (1u << m)))
            continue;
        bool dflt = m == SHM_JAVA_ZERO_LONGS;
        len += (size_t)snprintf(buf + len, size - len, "%s%s (java:disk%s%s, java:tmpfs%s%s)",
                                len ? "; " : "", what[m], dflt ? "" : ":",
                                dflt ? "" : shm_java_zero_methods[m], dflt ? "" : ":",
                                dflt ? "" : shm_java_zero_methods[m]);
    }
    return buf;
}

static void print_notes(FILE *f, const struct shm *sh)
{
    bool head = false;
    for (size_t i = 0; i < sh->n_rows; i++) {
        const struct shm_row *r = &sh->rows[i];
        const char *text = r->skipped || r->failed ? r->why : r->note;
        if (!text[0] || said_before(sh, i))
            continue;
        if (!head)
            fprintf(f, "\nskipped, failed, and what the arena did not obtain:\n");
        head = true;
        char size[32], line[1024];
        snprintf(line, sizeof(line), "%s %s: %s%s", r->mech,
                 tk_fmt_iec(size, sizeof(size), r->bytes),
                 r->skipped  ? "skipped: "
                 : r->failed ? "FAILED: "
                             : "",
                 text);
        fprintf(f, "  ");
        tk_opt_wrap(f, line, 2, 4);
    }
    if (sh->java_runtime[0]) {
        char line[1024], fills[512];
        snprintf(line, sizeof(line),
                 "java rows: %s, through FileChannel.map's MappedByteBuffer, zeroings by %s; "
                 "their faults are the whole JVM's (its compiler and collector threads too)",
                 sh->java_runtime, java_fills(fills, sizeof(fills), sh));
        fprintf(f, "\n");
        tk_opt_wrap(f, line, 0, 2);
    }
}

static void print_durations(FILE *f, const struct shm *sh)
{
    int w = 13;
    fprintf(f, "\n%-13s %8s %8s %12s %12s %12s %10s %10s\n", "mechanism", "size", "seconds",
            "writes/s", "min w/s", "max w/s", "minor", "major");
    for (size_t i = 0; i < sh->n_durs; i++) {
        const struct shm_duration *d = &sh->durs[i];
        char size[32];
        tk_fmt_iec(size, sizeof(size), d->bytes);
        if (d->skipped) {
            fprintf(f, "%-*s %8s skipped: %s\n", w, d->mech, size, d->why);
            continue;
        }
        double lo = INFINITY, hi = 0, secs = 0;
        uint64_t writes = 0, minor = 0, major = 0;
        for (size_t k = 0; k < d->n; k++) {
            const struct shm_tick *t = &d->ticks[k];
            double rate = t->span_s > 0 ? (double)t->writes / t->span_s : 0;
            lo = rate < lo ? rate : lo;
            hi = rate > hi ? rate : hi;
            secs += t->span_s;
            writes += t->writes;
            minor += t->minor_faults;
            major += t->major_faults;
        }
        fprintf(f, "%-*s %8s %8.0f %12.0f %12.0f %12.0f %10" PRIu64 " %10" PRIu64 "\n", w, d->mech,
                size, secs, secs > 0 ? (double)writes / secs : 0, d->n ? lo : 0, hi, minor, major);
    }
}

void shm_report(const struct tk_session *s, FILE *f)
{
    const struct shm *sh = s->state;
    if (sh->o.duration_ns) {
        print_durations(f, sh);
        return;
    }
    fprintf(f, "\n");
    print_times(f, sh);
    bool capped = false, inconsistent = false;
    for (size_t i = 0; i < sh->n_rows; i++) {
        capped |= sh->rows[i].writes_capped;
        inconsistent |= !sh->rows[i].skipped && shm_net_inconsistent(&sh->rows[i]);
    }
    if (capped)
        fprintf(f,
                "* writes cut at --budget before the %" PRIu64 " asked (the JSON has how "
                "many were done)\n",
                sh->o.writes);
    if (inconsistent)
        fprintf(f, "! a net below minus its precision: the generator alone costs more than "
                   "inside the writes' loop,\n"
                   "  where the CPU overlaps each store with the next draw; the store is not "
                   "measured there: read the write\n");
    print_faults(f, sh);
    if (sh->o.processes > 1)
        print_readers(f, sh);
    print_notes(f, sh);
}

void shm_facts(const struct tk_session *s, struct tk_facts *out)
{
    const struct shm *sh = s->state;
    *out = (struct tk_facts){
        .machine = &sh->mf,
        .timer = sh->timer_ok ? &sh->timer : NULL,
        .rt = &sh->rt,
        .has_seed = true,
        .seed = sh->o.seed,
    };
}

static void params_json(const struct shm *sh, struct tk_json *j)
{
    tk_json_key(j, "params");
    tk_json_begin_object(j);
    tk_json_key(j, "mechanisms");
    tk_json_begin_array_compact(j);
    for (int m = 0; m < SHM_MECHS; m++)
        if ((sh->mechs >> m) & 1u)
            tk_json_string(j, shm_mechs[m].name);
    tk_json_end_array(j);
    tk_json_key(j, "sizes");
    tk_json_begin_array_compact(j);
    for (size_t i = 0; i < sh->sizes.n; i++)
        tk_json_uint(j, sh->sizes.bytes[i]);
    tk_json_end_array(j);
    tk_json_kv_uint(j, "writes", sh->o.writes);
    tk_json_kv_bool(j, "writes_given", sh->writes_given);
    if (tk_json_key_or_null(j, "zeroings", sh->zeroings_given))
        tk_json_uint(j, sh->o.zeroings);
    tk_json_kv_uint(j, "budget_ns", sh->o.budget_ns);
    tk_json_kv_string(j, "dir", sh->o.dir);
    tk_json_kv_string(j, "dir_fs", sh->dir_fs);
    tk_json_kv_uint(j, "processes", sh->o.processes);
    tk_json_kv_uint(j, "duration_ns", sh->o.duration_ns);
    tk_json_kv_string(j, "generator", shm_generator_choices[sh->o.generator]);
    tk_json_kv_bool(j, "fifo", sh->o.fifo);
    tk_json_kv_bool(j, "force", sh->o.force);
    tk_json_kv_bool(j, "java", sh->o.java);
    tk_json_end_object(j);
}

static void system_json(const struct shm *sh, struct tk_json *j)
{
    tk_json_key(j, "system");
    tk_json_begin_object(j);
    tk_json_kv_string(j, "thp_enabled", sh->thp_mode);
    tk_json_kv_string(j, "shmem_thp_enabled", sh->shmem_thp_mode);
    tk_json_kv_uint(j, "dirty_writeback_centisecs", sh->dirty_writeback_cs);
    tk_json_kv_uint(j, "dirty_expire_centisecs", sh->dirty_expire_cs);
    tk_json_kv_uint(j, "mem_available_bytes", sh->mem_available);
    tk_json_end_object(j);
}

static void phase_json(struct tk_json *j, const struct shm_phase *ph)
{
    tk_json_begin_object_compact(j);
    tk_json_kv_uint(j, "ops", ph->ops);
    tk_json_kv_double(j, "ns", ph->ns);
    tk_json_kv_double(j, "ns_per_op", per_op(ph));
    tk_json_kv_uint(j, "minor_faults", ph->minor_faults);
    tk_json_kv_uint(j, "major_faults", ph->major_faults);
    tk_json_end_object(j);
}

static void pages_json(struct tk_json *j, const struct shm_row *r)
{
    const struct tk_smaps_entry *e = &r->pages.smaps;
    tk_json_begin_object_compact(j);
    tk_json_kv_uint(j, "kernel_page_bytes", e->kernel_page_bytes);
    tk_json_kv_uint(j, "rss_bytes", e->rss_bytes);
    tk_json_kv_uint(j, "hugetlb_bytes", e->hugetlb_bytes);
    tk_json_kv_uint(j, "anon_huge_bytes", e->anon_huge_bytes);
    tk_json_kv_uint(j, "shmem_pmd_bytes", e->shmem_pmd_bytes);
    tk_json_kv_uint(j, "file_pmd_bytes", e->file_pmd_bytes);
    tk_json_end_object(j);
}

static void reader_json(struct tk_json *j, const struct shm_reader *d)
{
    tk_json_begin_object_compact(j);
    tk_json_kv_bool(j, "done", d->done);
    tk_json_kv_bool(j, "by_name", d->by_name);
    tk_json_kv_bool(j, "matched", d->matched);
    tk_json_kv_uint(j, "pages", d->pages);
    tk_json_kv_double(j, "touch_ns", d->touch_ns);
    tk_json_kv_uint(j, "minor_faults", d->minor_faults);
    tk_json_kv_uint(j, "major_faults", d->major_faults);
    tk_json_kv_string(j, "why", d->why);
    tk_json_end_object(j);
}

static void row_json(const struct shm *sh, struct tk_json *j, const struct shm_row *r)
{
    tk_json_begin_object(j);
    tk_json_kv_string(j, "mechanism", r->mech);
    if (tk_json_key_or_null(j, "zero_method", r->zero_method[0] != '\0'))
        tk_json_string(j, r->zero_method);
    tk_json_kv_uint(j, "bytes", r->bytes);
    tk_json_kv_string(j, "status", r->skipped ? "skipped" : r->failed ? "failed" : "measured");
    tk_json_kv_string(j, "why", r->why);
    tk_json_kv_string(j, "note", r->note);
    tk_json_kv_uint(j, "mapped_bytes", r->mapped_bytes);
    tk_json_kv_uint(j, "page_bytes", r->page_bytes);
    if (tk_json_key_or_null(j, "pages", !r->skipped && r->pages.read))
        pages_json(j, r);
    tk_json_kv_double(j, "rng_ns_per_write", r->skipped ? NAN : r->rng_ns_per_write);
    tk_json_kv_double(j, "rng_spread_ns", r->skipped ? NAN : r->rng_spread_ns);
    tk_json_kv_double(j, "writes_spread_ns", r->skipped ? NAN : r->writes_spread_ns);
    double net = r->skipped ? NAN : shm_net_per_write(r);
    double precision = r->skipped ? NAN : shm_net_precision(r);
    tk_json_kv_double(j, "slice_ns_per_write", r->skipped ? NAN : r->slice_ns_per_write);
    tk_json_kv_double(j, "net_ns_per_write", net);
    tk_json_kv_double(j, "net_precision_ns", precision);
    if (tk_json_key_or_null(j, "net_resolved", !isnan(net) && !isnan(precision)))
        tk_json_bool(j, net > precision);
    if (tk_json_key_or_null(j, "net_consistent", !isnan(net) && !isnan(precision)))
        tk_json_bool(j, !shm_net_inconsistent(r));
    tk_json_kv_bool(j, "writes_capped", r->writes_capped);
    tk_json_key(j, "phases");
    tk_json_begin_object(j);
    for (int p = 0; p < SHM_PHASES; p++)
        if (tk_json_key_or_null(j, phase_ids[p], r->phase[p].done))
            phase_json(j, &r->phase[p]);
    tk_json_end_object(j);
    if (tk_json_key_or_null(j, "reader", sh->o.processes > 1 && !r->skipped))
        reader_json(j, &r->reader);
    tk_json_end_object(j);
}

static void duration_json(struct tk_json *j, const struct shm_duration *d)
{
    tk_json_begin_object(j);
    tk_json_kv_string(j, "mechanism", d->mech);
    tk_json_kv_uint(j, "bytes", d->bytes);
    tk_json_kv_string(j, "status", d->skipped ? "skipped" : "measured");
    tk_json_kv_string(j, "why", d->why);
    tk_json_key(j, "seconds");
    tk_json_begin_array(j);
    for (size_t k = 0; k < d->n; k++) {
        const struct shm_tick *t = &d->ticks[k];
        tk_json_begin_object_compact(j);
        tk_json_kv_double(j, "t_s", t->t_s);
        tk_json_kv_double(j, "span_s", t->span_s);
        tk_json_kv_uint(j, "writes", t->writes);
        tk_json_kv_uint(j, "minor_faults", t->minor_faults);
        tk_json_kv_uint(j, "major_faults", t->major_faults);
        tk_json_kv_uint(j, "dirty_kb", t->dirty_kb);
        tk_json_kv_uint(j, "writeback_kb", t->writeback_kb);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    tk_json_end_object(j);
}

void shm_json(const struct tk_session *s, struct tk_json *j)
{
    const struct shm *sh = s->state;
    params_json(sh, j);
    system_json(sh, j);
    tk_json_kv_double(j, "rng_ns_per_write", sh->rng_ns_per_write);
    tk_json_key(j, "rng");
    tk_json_begin_object_compact(j);
    tk_json_kv_uint(j, "runs", SHM_RNG_TRIALS);
    tk_json_kv_uint(j, "draws", sh->rng_draws);
    tk_json_kv_double(j, "median_ns_per_draw", sh->rng_ns_per_write);
    tk_json_kv_double(j, "iqr_ns_per_draw", sh->rng_spread_ns);
    tk_json_end_object(j);
    if (tk_json_key_or_null(j, "java", sh->o.java)) {
        tk_json_begin_object(j);
        tk_json_kv_bool(j, "available", sh->java_ok);
        tk_json_kv_string(j, "why", sh->java_ok ? "" : sh->java_why);
        tk_json_kv_string(j, "runtime", sh->java_runtime);
        tk_json_key(j, "zero_methods");
        tk_json_begin_array_compact(j);
        unsigned fills = sh->o.java_zero ? sh->o.java_zero : 1u << SHM_JAVA_ZERO_LONGS;
        for (int m = 0; m < SHM_JAVA_ZERO_N; m++)
            if (fills & (1u << m))
                tk_json_string(j, shm_java_zero_methods[m]);
        tk_json_end_array(j);
        tk_json_end_object(j);
    }
    tk_json_key(j, "rows");
    tk_json_begin_array(j);
    for (size_t i = 0; i < sh->n_rows; i++)
        row_json(sh, j, &sh->rows[i]);
    tk_json_end_array(j);
    if (tk_json_key_or_null(j, "duration", sh->o.duration_ns > 0)) {
        tk_json_begin_array(j);
        for (size_t i = 0; i < sh->n_durs; i++)
            duration_json(j, &sh->durs[i]);
        tk_json_end_array(j);
    }
}

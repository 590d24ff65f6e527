/*
 * The bench kit's emulation check (tools/common/describe.h), against its
 * header: made-up cpuinfo files of an x86 CPU and of an ARM CPU give
 * "emulated" exactly when the CPU is not of the architecture this test was
 * built for, with the architectures named; a file with both or neither, or
 * none, is native; and on x86-64, where make test runs natively, this
 * machine's own /proc/cpuinfo is native.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "common/describe.h"

static const char x86_cpu[] = "processor\t: 0\nvendor_id\t: AuthenticAMD\n"
                              "flags\t\t: fpu vme de pse tsc msr\n";
static const char arm_cpu[] = "processor\t: 0\nBogoMIPS\t: 48.00\nFeatures\t: fp asimd evtstrm\n"
                              "CPU implementer\t: 0x41\n";

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL, );
    fputs(text, f);
    fclose(f);
}

static void emulation_of(const char *dir, const char *name, const char *text, char *buf,
                         size_t size)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    write_file(path, text);
    tk_emulation_check(path, buf, size);
}

int main(int argc, char **argv)
{
    REQUIRE(argc == 2, 1);
    char got[96];
    test_context = "x86 CPU";
    emulation_of(argv[1], "cpuinfo-x86", x86_cpu, got, sizeof(got));
#if defined(__x86_64__) || defined(__i386__)
    CHECK_EQ(strcmp(got, ""), 0);
#elif defined(__aarch64__) || defined(__arm__)
    CHECK(strstr(got, "qemu-user") && strstr(got, "x86 CPU"));
#endif
    test_context = "ARM CPU";
    emulation_of(argv[1], "cpuinfo-arm", arm_cpu, got, sizeof(got));
#if defined(__x86_64__)
    CHECK(strstr(got, "qemu-user") && strstr(got, "x86_64 program") && strstr(got, "ARM CPU"));
#elif defined(__aarch64__) || defined(__arm__)
    CHECK_EQ(strcmp(got, ""), 0);
#endif
    test_context = "both, neither, none";
    char both[sizeof(x86_cpu) + sizeof(arm_cpu)];
    snprintf(both, sizeof(both), "%s%s", x86_cpu, arm_cpu);
    emulation_of(argv[1], "cpuinfo-both", both, got, sizeof(got));
    CHECK_EQ(strcmp(got, ""), 0);
    emulation_of(argv[1], "cpuinfo-neither", "processor\t: 0\n", got, sizeof(got));
    CHECK_EQ(strcmp(got, ""), 0);
    strcpy(got, "stale");
    tk_emulation_check("/nonexistent/cpuinfo", got, sizeof(got));
    CHECK_EQ(strcmp(got, ""), 0);
#if defined(__x86_64__)
    /* make test runs natively on x86-64: this machine is no emulator's */
    test_context = "this machine";
    struct tk_machine mf;
    tk_machine_collect(&mf);
    CHECK_EQ(strcmp(mf.emulation, ""), 0);
#endif
    test_context = NULL;
    return test_summary("tools.describe");
}

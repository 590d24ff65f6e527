/*
 * The bench kit's emulation check (tools/common/describe.h), against its
 * header: made-up cpuinfo files of an x86 CPU and of an ARM CPU give
 * "emulated" exactly when the CPU is not of the architecture this test was
 * built for, with the architectures named; a file with both or neither, or
 * none, is native; made-up executables of each machine give "emulated"
 * exactly when the machine is not the build's; this process is seen
 * emulated exactly when CTest runs it under an emulator; and on x86-64,
 * where make test runs natively, this machine is native.
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

/* The directory for made-up files is the argument (main has checked it). */
static void emulation_of(const char *name, const char *text, char *buf, size_t size)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", test_argv[0], name);
    write_file(path, text);
    tk_emulation_check(path, buf, size);
}

TEST_CASE("an x86 cpuinfo is emulated exactly on another architecture")
{
    char got[96];
    emulation_of("cpuinfo-x86", x86_cpu, got, sizeof(got));
#if defined(__x86_64__) || defined(__i386__)
    CHECK_EQ(strcmp(got, ""), 0);
#elif defined(__aarch64__) || defined(__arm__)
    CHECK(strstr(got, "qemu-user") && strstr(got, "x86 CPU"));
#endif
}

TEST_CASE("an ARM cpuinfo is emulated exactly on another architecture")
{
    char got[96];
    emulation_of("cpuinfo-arm", arm_cpu, got, sizeof(got));
#if defined(__x86_64__)
    CHECK(strstr(got, "qemu-user") && strstr(got, "x86_64 program") && strstr(got, "ARM CPU"));
#elif defined(__aarch64__) || defined(__arm__)
    CHECK_EQ(strcmp(got, ""), 0);
#endif
}

TEST_CASE("a cpuinfo of both, of neither, or none is native")
{
    char got[96];
    char both[sizeof(x86_cpu) + sizeof(arm_cpu)];
    snprintf(both, sizeof(both), "%s%s", x86_cpu, arm_cpu);
    emulation_of("cpuinfo-both", both, got, sizeof(got));
    CHECK_EQ(strcmp(got, ""), 0);
    emulation_of("cpuinfo-neither", "processor\t: 0\n", got, sizeof(got));
    CHECK_EQ(strcmp(got, ""), 0);
    strcpy(got, "stale");
    tk_emulation_check("/nonexistent/cpuinfo", got, sizeof(got));
    CHECK_EQ(strcmp(got, ""), 0);
}

/* The executable's ELF machine: one of this build's own is native,
 * another machine's is the emulator. */
TEST_CASE("an executable of another machine is emulated, one of the build's is native")
{
    char got[96];
    static const unsigned machines[] = { 62, 183, 40, 3 };
#if defined(__x86_64__)
    const unsigned own = 62;
#elif defined(__aarch64__)
    const unsigned own = 183;
#elif defined(__arm__)
    const unsigned own = 40;
#else
    const unsigned own = 3;
#endif
    for (size_t i = 0; i < sizeof(machines) / sizeof(machines[0]); i++) {
        unsigned char h[64] = { 0x7f, 'E', 'L', 'F', 1, 1, 1 };
        h[18] = (unsigned char)(machines[i] & 0xff);
        h[19] = (unsigned char)(machines[i] >> 8);
        char path[4096];
        snprintf(path, sizeof(path), "%s/exe-%u", test_argv[0], machines[i]);
        FILE *f = fopen(path, "wb");
        REQUIRE(f != NULL, );
        fwrite(h, 1, sizeof(h), f);
        fclose(f);
        tk_emulation_check_exe(path, got, sizeof(got));
        if (machines[i] == own)
            CHECK_EQ(strcmp(got, ""), 0);
        else
            CHECK(strstr(got, "user-mode emulation") && strstr(got, "exe-"));
    }
}

TEST_CASE("a file that is no ELF file, or none, says nothing")
{
    char got[96];
    char text[4096];
    snprintf(text, sizeof(text), "%s/not-elf", test_argv[0]);
    write_file(text, "#!/bin/sh\n");
    tk_emulation_check_exe(text, got, sizeof(got));
    CHECK_EQ(strcmp(got, ""), 0);
    strcpy(got, "stale");
    tk_emulation_check_exe("/nonexistent/exe", got, sizeof(got));
    CHECK_EQ(strcmp(got, ""), 0);
}

/* This process: under the emulator a cross build's tests run under
 * (RTMEM_TEST_EMULATED), seen; natively, not. */
TEST_CASE("this process is seen emulated exactly under an emulator")
{
    char got[96];
    tk_emulation_detect(got, sizeof(got));
    if (test_emulated())
        CHECK(got[0] != '\0');
    else
        CHECK_EQ(strcmp(got, ""), 0);
    printf("tools.describe: this process: %s\n", got[0] ? got : "native");
    /* the executable alone sees it too (what qemu-user from 8.1 on, which
     * makes up a cpuinfo of the guest's machine, leaves) */
    char by_exe[96];
    tk_emulation_check_exe("/proc/thread-self/exe", by_exe, sizeof(by_exe));
    if (test_emulated())
        CHECK(by_exe[0] != '\0');
    else
        CHECK_EQ(strcmp(by_exe, ""), 0);
    printf("tools.describe: this process's executable: %s\n", by_exe[0] ? by_exe : "native");
}

#if defined(__x86_64__)
/* make test runs natively on x86-64: this machine is no emulator's */
TEST_CASE("this x86-64 machine is native")
{
    struct tk_machine mf;
    tk_machine_collect(&mf);
    CHECK_EQ(strcmp(mf.emulation, ""), 0);
}
#endif

int main(int argc, char **argv)
{
    REQUIRE(argc == 2, 1);
    return test_main(argc, argv, "tools.describe");
}

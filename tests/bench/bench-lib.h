/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the benchmarks share: clocks and statistics, the table rows tools/bench collects, calls to
 * edfd, helper processes with sleeping threads to admit, and readings of the kernel and /proc.
 *
 * Every benchmark runs under bench-edfd, which starts a private dbus-daemon and a fresh edfd and
 * exports DBUS_SYSTEM_BUS_ADDRESS and EDFD_PID. Benchmarks print figures; they assert nothing.
 *
 * Table rows: a line "@row<TAB>figure<TAB>value<TAB>peer<TAB>ratio<TAB>target<TAB>verdict" on stdout.
 * tools/bench collects them into one table; everything else a benchmark prints is for people. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "basic/macro.h"

#define BENCH_GROUP "bench"

/* CLOCK_MONOTONIC in ns. */
uint64_t bench_now_ns(void);
/* Sleep until an absolute CLOCK_MONOTONIC time in ns. */
void bench_sleep_until(uint64_t t_ns);

/* Sort v[0..n) ascending (in place). */
void bench_sort_u64(uint64_t *v, size_t n);
/* The p-quantile (0 <= p <= 1, nearest rank) of a sorted array; 0 for n == 0. */
uint64_t bench_quantile(const uint64_t *sorted, size_t n, double p);

/* Median, minimum and maximum of a set of per-run figures. */
typedef struct BenchSpread {
        double median, min, max;
} BenchSpread;

/* The spread of v[0..n) (v is not changed). All zero for n == 0. */
BenchSpread bench_spread(const double *v, size_t n);

/* "142 us (138-150)" ("1.25x (1.20-1.31)" for the unit "x"): the median and the min-max spread, each divided by scale, with unit.
 * Writes into buf (size bytes) and returns it. */
char *bench_fmt(char *buf, size_t size, BenchSpread s, double scale, const char *unit, int decimals);

/* One row of the final table, on stdout (see above). Empty strings print as "-". */
void bench_row(const char *figure, const char *value, const char *peer, const char *ratio, const char *target,
               const char *verdict);

/* "met" or "MISSED". */
const char *bench_verdict(bool met);

/* The number of repeats: --runs N on the command line (argv is scanned for it), else $BENCH_RUNS,
 * else def. */
unsigned bench_runs(int argc, char **argv, unsigned def);

/* Connect to the bus edfd is on ($DBUS_SYSTEM_BUS_ADDRESS, set by bench-edfd). Exits the program with
 * a message when it cannot. */
sd_bus *bench_bus_open(void);

/* edfd's pid ($EDFD_PID, set by bench-edfd); exits with a message if unset. */
pid_t bench_edfd_pid(void);

/* Admit thread tid of process pid into group with runtime/period (deadline = period) through edfd.
 * A KernelRefused answer (the machine-wide pool was full for a moment: another user) is retried for
 * up to 2 s and counted in bench_kernel_busy. Returns 0 and the id, or a negative errno with the bus
 * error's message printed to stderr. */
int bench_admit(sd_bus *bus, pid_t pid, pid_t tid, const char *group, uint64_t runtime, uint64_t period,
                uint64_t *ret_id);
/* Release reservation id, retried like bench_admit(). Returns 0 or a negative errno (message printed). */
int bench_release(sd_bus *bus, uint64_t id);
/* One Echo(42) round trip: the ns it took; exits on failure. */
uint64_t bench_echo(sd_bus *bus);
/* KernelRefused answers retried by bench_admit() and bench_release(). */
extern unsigned bench_kernel_busy;
/* Print a note if bench_kernel_busy is not 0. */
void bench_note_interference(void);

/* Read a "t" or "u" property of edfd's manager into *ret. Returns 0 or a negative errno. */
int bench_property_u64(sd_bus *bus, const char *name, uint64_t *ret);

/* The books, as edfd's ListReservations and ListGroups show them. */
typedef struct BenchBooks {
        uint64_t reservations;   /* number of reservations */
        uint64_t sum_runtime;    /* sum of their runtimes (ns) */
        uint64_t group_allocated; /* BENCH_GROUP's allocated bandwidth */
        uint64_t root_allocated;  /* the root's allocated bandwidth, less what unmanaged threads hold */
} BenchBooks;

/* Read the books. Returns 0 or a negative errno. */
int bench_books(sd_bus *bus, BenchBooks *ret);

/* A child process whose threads all sleep; it is killed when its parent dies. tids[0] == pid. */
typedef struct BenchHelper {
        pid_t pid;
        unsigned n;
        pid_t *tids;
} BenchHelper;

/* Start a helper with n sleeping threads (the main thread counts). Returns 0 or a negative errno. */
int bench_helper_spawn(unsigned n, BenchHelper *ret);
/* Kill and reap the helper, free its tids. */
void bench_helper_kill(BenchHelper *h);

/* A field such as "VmRSS" or "VmHWM" of /proc/PID/status, in KiB; negative errno on failure. */
long bench_status_kib(pid_t pid, const char *field);

/* CPU time the main thread of pid has run, in ns (/proc/PID/schedstat); negative errno on failure. */
int64_t bench_cpu_ns(pid_t pid);

/* The kernel's free deadline bandwidth (BW units, 1 << 20 = one CPU), measured by binary-searching what
 * sched_setattr still admits on sleeping helper threads, which are put back to a zero-rounding
 * bandwidth before they exit. Holds the pool nearly full for well under a millisecond. Returns 0 or a
 * negative errno. */
int bench_kernel_headroom(uint64_t *ret_bw);

/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* edfctl: the command-line client of edfd.
 *
 * main() reads every option into an Args, finds the verb in the table below and checks that the
 * verb takes each option given, then calls the verb. Anything wrong with the command line is
 * refused (exit 2) before the bus is opened, so a bad call never changes the daemon. admit and
 * release make exactly one method call and nothing else: no property fetch, no JSON library. */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "core/duration.h"
#include "edfctl.h"
#include "core/params.h"
#include "shared/protocol.h"

typedef struct Verb {
        const char *name, *subverb;
        size_t min_args, max_args;   /* positional arguments after the verb */
        unsigned options;            /* ArgOption bits the verb accepts */
        int (*run)(const Args *a);
        const char *synopsis;
        const char *summary;         /* for edfctl --help */
        const char *help;
} Verb;

#define ADMIT_OPTIONS                                                                                  \
        (ARG_GROUP | ARG_RUNTIME | ARG_DEADLINE | ARG_PERIOD | ARG_TID | ARG_PID | ARG_RECLAIM |      \
         ARG_OVERRUN_SIGNAL | ARG_MOVE | ARG_WORK | ARG_MARGIN | ARG_OVERHEAD | ARG_SPLIT | ARG_STARTUP)
#define GROUP_SIZE_OPTIONS (ARG_RUNTIME | ARG_PERIOD | ARG_BANDWIDTH)

static const Verb verbs[] = {
        { "status", NULL, 0, 0, ARG_JSON, verb_status, "status [--json]", "Show the group tree, its bandwidths and reservations",
          "Show the group tree: each group's runtime/period, bandwidth, allocated and free, the\n"
          "capacity and what unmanaged deadline threads hold, and under each group its\n"
          "reservations (id, pid, tid, command, runtime/deadline/period, split-from).\n"
          "\n"
          "  --json    One JSON document: times in ns, bandwidths in fractions of a CPU\n" },
        { "list", NULL, 0, 0, ARG_JSON, verb_list, "list [--json]", "List the reservations",
          "List the reservations.\n"
          "\n"
          "  --json    A JSON array: times in ns, bandwidths in fractions of a CPU\n" },
        { "admit", NULL, 0, 0, ADMIT_OPTIONS, verb_admit,
          "admit [-g GROUP] (-T RUNTIME | --work WORK [--margin PERCENT] [--overhead O]) -P PERIOD\n"
          "             [-D DEADLINE] [--reclaim] [--overrun-signal] [--move]\n"
          "             (-t TID | -p PID | [--startup BOUND] -- COMMAND [ARG...])\n"
          "             [--split TID2]",
          "Admit a thread, a process, or a command run under the reservation",
          "Admit a thread into a group, or run a command under a reservation from its first\n"
          "instruction (as chrt does). Prints the reservation id, except with a command.\n"
          "\n"
          "  -g --group=GROUP       Group path (default: edfd's default-group, else \"/\")\n"
          "  -T --runtime=RUNTIME   Runtime per period (10ms, 250us, 1.5ms)\n"
          "     --work=WORK         Instead of -T: the work per period; the runtime is\n"
          "                         work * (1 + margin) + the per-job overhead\n"
          "     --margin=PERCENT    Added to --work (default 0%)\n"
          "     --overhead=auto|none|DURATION\n"
          "                         The per-job overhead added to --work: auto (default) is\n"
          "                         edfctl calibrate's measurement for this machine\n"
          "  -P --period=PERIOD     Period\n"
          "  -D --deadline=DEADLINE Relative deadline (default: the period)\n"
          "     --reclaim           Let the thread reclaim unused bandwidth (SCHED_FLAG_RECLAIM)\n"
          "     --overrun-signal    SIGXCPU when the thread overruns its runtime\n"
          "     --move              Also move the process into the group's cgroup\n"
          "  -t --tid=TID           The thread to admit\n"
          "  -p --pid=PID           The process to admit (its main thread)\n"
          "  -- COMMAND [ARG...]    Admit edfctl itself, then execute COMMAND in its place;\n"
          "                         its exit status is edfctl's (126/127 if it cannot start)\n"
          "     --startup=BOUND     With -- COMMAND: run it first as SCHED_OTHER and admit it\n"
          "                         when it first sleeps, at most BOUND after its exec (1s),\n"
          "                         so that its start-up is not charged to its first jobs\n"
          "     --split=TID2        With -t or -p, in a partitioned group: run each job as two\n"
          "                         stages on two CPUs, stage 1 by the thread, stage 2 by TID2\n"
          "                         (a thread of the same process); prints both ids and stages\n" },
        { "run", NULL, 0, 0, ARG_GROUP | ARG_MARGIN | ARG_OVERHEAD, verb_run,
          "run [-g GROUP] [--margin PERCENT] [--overhead O] -- PROGRAM [ARG...]",
          "Run a program that sets SCHED_DEADLINE itself, admitted by edfd",
          "Run PROGRAM (and everything it starts) with its own sched_setattr(2) calls to\n"
          "SCHED_DEADLINE admitted by edfd, as the user who runs edfctl: edfd decides as for\n"
          "edfctl admit, and the program gets 0 or the kernel's errno for the same request\n"
          "(EBUSY when edfd refuses the bandwidth). Leaving SCHED_DEADLINE ends the\n"
          "reservation. PROGRAM runs with no_new_privs: a setuid program has no privilege.\n"
          "Exits as PROGRAM does, once every process it started has ended.\n"
          "\n"
          "  -g --group=GROUP       Group path (default: edfd's default-group, else \"/\")\n"
          "     --margin=PERCENT    Raise each runtime by this share of itself\n"
          "     --overhead=auto|none|DURATION\n"
          "                         And by this per-job overhead (auto: edfctl calibrate's);\n"
          "                         sched_getattr(2) then shows the raised runtime\n" },
        { "release", NULL, 0, 1, ARG_TID | ARG_PID, verb_release, "release (ID | -t TID | -p PID)",
          "Release a reservation, a thread's, or all of a process",
          "Release a reservation by its id, the reservation of a thread, or every reservation\n"
          "of a process.\n"
          "\n"
          "  -t --tid=TID    The thread whose reservation to release\n"
          "  -p --pid=PID    Release every reservation of this process\n" },
        { "group", "create", 1, 1, GROUP_SIZE_OPTIONS, verb_group,
          "group create PATH (-T RUNTIME -P PERIOD | --bandwidth PERCENT)", "Create a group",
          "Create a group under an existing parent (\"audio/pipewire\").\n"
          "\n"
          "  -T --runtime=RUNTIME      Runtime per period; a group may exceed one CPU\n"
          "  -P --period=PERIOD        Period\n"
          "     --bandwidth=PERCENT    Instead of -T/-P: a share of one CPU (20% = 20ms/100ms)\n" },
        { "group", "set", 1, 1, GROUP_SIZE_OPTIONS, verb_group,
          "group set PATH (-T RUNTIME -P PERIOD | --bandwidth PERCENT)", "Resize a group",
          "Change a group's bandwidth; refused below what it holds or above what its parent has.\n"
          "\n"
          "  -T --runtime=RUNTIME      Runtime per period\n"
          "  -P --period=PERIOD        Period\n"
          "     --bandwidth=PERCENT    Instead of -T/-P: a share of one CPU (20% = 20ms/100ms)\n" },
        { "group", "remove", 1, 1, 0, verb_group, "group remove PATH", "Remove an empty group",
          "Remove an empty group (no groups or reservations in it).\n" },
        { "reload", NULL, 0, 0, 0, verb_reload, "reload", "Reload edfd's configuration",
          "Reload edfd's configuration; an invalid file is refused and changes nothing.\n" },
        { "plan", NULL, 1, 1, ARG_JSON | ARG_CPUS | ARG_CAPACITY | ARG_SERVER | ARG_FIT | ARG_ORDER | ARG_LIVE, verb_plan,
          "plan FILE [--cpus N] [--capacity PERCENT] [--server RUNTIME/PERIOD|none]\n"
          "             [--fit best|first|worst] [--order given|decreasing] [--json]\n"
          "       plan --live FILE [--json]",
          "Check a task set offline: where each task would go, or why not",
          "Place the task set in FILE (CSV or YAML: runtime, deadline, period, optional name,\n"
          "group, split) one task after the other with partitioned EDF, as edfd would admit it,\n"
          "and print for each task placed, split in two stages, or refused with the reason, its\n"
          "CPU and the test that decided. Offline: no bus, nothing changed. \"-\" reads stdin.\n"
          "Exit status 1 when any task is refused.\n"
          "\n"
          "  --cpus=N                    CPUs of the partition (default: the online CPUs)\n"
          "  --capacity=PERCENT          What the kernel lets deadline tasks take per CPU\n"
          "                              (sched_rt_runtime_us/period; default 95%, or unlimited)\n"
          "  --server=RUNTIME/PERIOD     The fair server per CPU (default 50ms/1s, kernels since\n"
          "                              6.12; none for older ones)\n"
          "  --fit=best|first|worst      Which passing CPU takes a task (default best)\n"
          "  --order=given|decreasing    Decide the tasks in the file's order (default: as edfd\n"
          "                              admits requests, one after the other) or the largest\n"
          "                              utilization first, which loses fewer sets that fit\n"
          "  --live                      Ask the running edfd instead: its groups, partitions and\n"
          "                              what they hold now decide (the Plan method); nothing is\n"
          "                              applied. Groups are edfd's; a task without one goes to\n"
          "                              the default group\n"
          "  --json                      One JSON document: times in ns, shares of a CPU\n" },
        { "calibrate", NULL, 0, 1, ARG_GROUP | ARG_DURATION, verb_calibrate, "calibrate [-g GROUP] [--duration 30s] [FILE]",
          "Measure the per-job overhead of this machine for admit --work",
          "Measure what the kernel charges a periodic job besides its work (wake-up, switch,\n"
          "the system calls around the job) with a 4ms/10ms reservation of edfctl's own, and\n"
          "keep its 99.9th percentile in FILE (default: $EDFD_CALIBRATION, else\n"
          EDFD_CALIBRATION_PATH "). admit --work adds it to every budget while the kernel,\n"
          "the CPU model and the CPU count are the ones measured. Needs edfd and root.\n"
          "\n"
          "  -g --group=GROUP       The group of the calibration's reservation\n"
          "     --duration=TIME     How long to measure, 3s to 1h (default 30s)\n" },
        { "monitor", NULL, 0, 0, 0, verb_monitor, "monitor", "Print events as they happen",
          "Print admissions, releases, splits and exits as they happen, until interrupted.\n" },
};

static const struct {
        unsigned bit;
        const char *name;
} option_names[] = {
        { ARG_JSON, "--json" },
        { ARG_GROUP, "-g/--group" },
        { ARG_RUNTIME, "-T/--runtime" },
        { ARG_DEADLINE, "-D/--deadline" },
        { ARG_PERIOD, "-P/--period" },
        { ARG_TID, "-t/--tid" },
        { ARG_PID, "-p/--pid" },
        { ARG_RECLAIM, "--reclaim" },
        { ARG_OVERRUN_SIGNAL, "--overrun-signal" },
        { ARG_MOVE, "--move" },
        { ARG_BANDWIDTH, "--bandwidth" },
        { ARG_WORK, "--work" },
        { ARG_MARGIN, "--margin" },
        { ARG_CPUS, "--cpus" },
        { ARG_CAPACITY, "--capacity" },
        { ARG_SERVER, "--server" },
        { ARG_FIT, "--fit" },
        { ARG_ORDER, "--order" },
        { ARG_SPLIT, "--split" },
        { ARG_STARTUP, "--startup" },
        { ARG_OVERHEAD, "--overhead" },
        { ARG_DURATION, "--duration" },
        { ARG_LIVE, "--live" },
};

static const char *option_name(unsigned bit) {
        for (size_t i = 0; i < ELEMENTSOF(option_names); i++)
                if (option_names[i].bit == bit)
                        return option_names[i].name;
        return "?";
}

static void help(void) {
        printf("edfctl [OPTIONS...] COMMAND ...\n"
               "\n"
               "Ask edfd for guaranteed CPU bandwidth (SCHED_DEADLINE) and inspect its books.\n"
               "\n"
               "Commands:\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++) {
                /* The synopses are laid out for "edfctl VERB"; here they start 5 columns earlier. */
                fputs("  ", stdout);
                for (const char *p = verbs[i].synopsis; *p; p++)
                        if (*p == '\n') {
                                fputs("\n  ", stdout);
                                p += strspn(p + 1, " ") > 7 ? 7 : 0;
                        } else
                                putchar(*p);
                printf("\n      %s\n", verbs[i].summary);
        }
        printf("\n"
               "Options:\n"
               "  -h --help     Show this help, or a command's (edfctl admit --help)\n"
               "     --version  Show the version\n"
               "\n"
               "Durations take a unit: ns, us, ms or s (10ms, 250us, 1.5s). A bandwidth is a share\n"
               "of one CPU: 20%% means 20ms every 100ms. Without a command, edfctl shows status.\n"
               "Exit status: 0 done, 1 refused or failed, 2 bad usage or invalid input,\n"
               "3 edfd not reachable. The bus is the system bus, or $DBUS_SYSTEM_BUS_ADDRESS.\n");
}

static void verb_help(const Verb *v) {
        printf("edfctl %s\n\n%s", v->synopsis, v->help);
}

/* --- argument values --- */

static int parse_pid_arg(const char *what, const char *s, uint32_t *ret) {
        const char *reason = NULL;

        if (parse_pid(s, ret, &reason) < 0)
                return usage_invalid(what, s, reason);
        return EDFCTL_EXIT_OK;
}

static int params_refused(ParamsOutcome o, const DlParams *p, const char *runtime_note) {
        char a[DURATION_MAX], b[DURATION_MAX];

        switch (o) {
        case PARAMS_RUNTIME_ABOVE_DEADLINE:
                fprintf(stderr, "edfctl: invalid parameters: runtime %s%s is above the %s %s\n",
                        duration_format(p->runtime, a), runtime_note, p->deadline ? "deadline" : "period",
                        duration_format(p->deadline ?: p->period, b));
                break;
        case PARAMS_DEADLINE_ABOVE_PERIOD:
                fprintf(stderr, "edfctl: invalid parameters: deadline %s is above the period %s\n",
                        duration_format(p->deadline, a), duration_format(p->period, b));
                break;
        case PARAMS_RUNTIME_TOO_SMALL:
                fprintf(stderr, "edfctl: invalid parameters: runtime %s%s is below 1024ns, the kernel's minimum\n",
                        duration_format(p->runtime, a), runtime_note);
                break;
        default:
                fprintf(stderr, "edfctl: invalid parameters: %s\n", params_outcome_to_string(o));
        }
        return EDFCTL_EXIT_USAGE;
}

/* --- admit --- */

int admit_overhead(const Args *a, uint64_t *ret) {
        const char *mode = a->overhead ?: "auto";
        char why[512];
        Calibration c;
        int r;

        *ret = 0;
        if (strcmp(mode, "none") == 0)
                return EDFCTL_EXIT_OK;
        if (strcmp(mode, "auto") != 0) {
                const char *reason;
                if (duration_parse(mode, ret, &reason) < 0)
                        return usage_invalid("overhead", mode, "is not auto, none or a duration (85us)");
                return EDFCTL_EXIT_OK;
        }
        r = calibration_load(calibration_path(), &c, why, sizeof why);
        if (r > 0) {
                *ret = c.overhead;
                return EDFCTL_EXIT_OK;
        }
        if (r == 0)
                fprintf(stderr, "edfctl: no per-job overhead added: %s does not exist (run edfctl calibrate as root to "
                        "measure it, or give --overhead none)\n", calibration_path());
        else if (r == -ESTALE)
                fprintf(stderr, "edfctl: no per-job overhead added: %s (run edfctl calibrate again)\n", why);
        else {
                fprintf(stderr, "edfctl: %s (run edfctl calibrate again, or give --overhead none)\n", why);
                return EDFCTL_EXIT_FAILED;
        }
        return EDFCTL_EXIT_OK;
}

static int admit_params(const Args *a, DlParams *ret) {
        DlParams p = {};
        char note[128] = "";
        ParamsOutcome o;
        int ex;

        if ((a->given & ARG_RUNTIME) && (a->given & ARG_WORK))
                return usage_error(a, "-T/--runtime and --work exclude each other");
        if (!(a->given & (ARG_RUNTIME | ARG_WORK)))
                return usage_error(a, "the runtime is missing: give -T RUNTIME, or --work WORK [--margin PERCENT]");
        if ((a->given & ARG_MARGIN) && !(a->given & ARG_WORK))
                return usage_error(a, "--margin is added to --work; give --work WORK instead of -T");
        if ((a->given & ARG_OVERHEAD) && !(a->given & ARG_WORK))
                return usage_error(a, "--overhead is added to --work; give --work WORK instead of -T");
        if (!(a->given & ARG_PERIOD))
                return usage_error(a, "the period is missing: give -P PERIOD");

        if (a->given & ARG_RUNTIME) {
                ex = parse_duration_arg("runtime", a->runtime, &p.runtime);
                if (ex != EDFCTL_EXIT_OK)
                        return ex;
        } else {
                uint64_t work, margin = 0, overhead = 0;
                const char *reason = NULL;
                char w[DURATION_MAX], oh[DURATION_MAX], t[DURATION_MAX];

                ex = parse_duration_arg("work", a->work, &work);
                if (ex != EDFCTL_EXIT_OK)
                        return ex;
                if ((a->given & ARG_MARGIN) && percent_parse(a->margin, &margin, &reason) < 0)
                        return usage_invalid("margin", a->margin, reason);
                ex = admit_overhead(a, &overhead);
                if (ex != EDFCTL_EXIT_OK)
                        return ex;
                if (budget_from_work(work, margin, overhead, &p.runtime) < 0)
                        return usage_invalid("work", a->work, "is too large with this margin and overhead");
                if (overhead > 0) {
                        snprintf(note, sizeof note, " (work %s + %s + %s per-job overhead)", duration_format(work, w),
                                 a->margin ?: "0%", duration_format(overhead, oh));
                        fprintf(stderr, "edfctl: runtime %s: work %s + margin %s + per-job overhead %s (%s)\n",
                                duration_format(p.runtime, t), w, a->margin ?: "0%", oh,
                                a->overhead && strcmp(a->overhead, "auto") != 0 ? "--overhead" : "edfctl calibrate");
                } else
                        snprintf(note, sizeof note, " (work %s + %s)", duration_format(work, w), a->margin ?: "0%");
        }
        ex = parse_duration_arg("period", a->period, &p.period);
        if (ex != EDFCTL_EXIT_OK)
                return ex;
        if (a->given & ARG_DEADLINE) {
                ex = parse_duration_arg("deadline", a->deadline, &p.deadline);
                if (ex != EDFCTL_EXIT_OK)
                        return ex;
                if (p.deadline == 0)
                        return usage_invalid("deadline", a->deadline, "is 0 (leave -D out for a deadline equal to the period)");
        }

        /* The kernel's ordering rules; the period limits of this machine are edfd's to check. */
        o = dl_params_check(&p, NULL);
        if (o != PARAMS_OK)
                return params_refused(o, &p, note);
        *ret = p;
        return EDFCTL_EXIT_OK;
}

int request_make(uint32_t pid, uint32_t tid, const char *group, const DlParams *p, uint64_t flags,
                        edfd_request **ret) {
        edfd_request *q = NULL;
        int r;

        r = edfd_request_new(&q);
        r = r ?: edfd_request_set_runtime(q, p->runtime);
        r = r ?: edfd_request_set_deadline(q, p->deadline);
        r = r ?: edfd_request_set_period(q, p->period);
        r = r ?: edfd_request_set_group(q, group);
        r = r ?: edfd_request_set_flags(q, flags);
        r = r ?: edfd_request_set_thread(q, (pid_t) pid, (pid_t) tid);
        if (r < 0) {
                edfd_request_free(q);
                fprintf(stderr, "edfctl: cannot make the request: %s\n", strerror(-r));
                return r;
        }
        *ret = q;
        return 0;
}

/* admit --split: AdmitSplit, then both stages, one line each. */
static int admit_split(uint32_t pid, uint32_t tid1, uint32_t tid2, const char *group, const DlParams *p, uint64_t flags) {
        _cleanup_(edfd_closep) edfd *e = NULL;
        _cleanup_(edfd_request_freep) edfd_request *q = NULL;
        _cleanup_(edfd_split_freep) edfd_split *s = NULL;
        char a[DURATION_MAX], b[DURATION_MAX], c[DURATION_MAX], d[DURATION_MAX];
        uint64_t r1;
        int r, ex;

        if (request_make(pid, tid1, group, p, flags, &q) < 0)
                return EDFCTL_EXIT_FAILED;
        ex = edfctl_connect(&e);
        if (ex != EDFCTL_EXIT_OK)
                return ex;
        r = edfd_admit_split(e, q, (pid_t) tid2, &s);
        if (r < 0)
                return edfctl_failed(e, r, "AdmitSplit");
        r1 = edfd_split_runtime(s, 1);
        printf("%" PRIu64 " stage 1: %s within %s on cpu%u\n", edfd_split_id(s, 1), duration_format(r1, a),
               duration_format(r1, b), edfd_split_cpu(s, 1));
        printf("%" PRIu64 " stage 2: %s within %s on cpu%u, released %s after stage 1\n", edfd_split_id(s, 2),
               duration_format(edfd_split_runtime(s, 2), a), duration_format((p->deadline ?: p->period) - r1, c),
               edfd_split_cpu(s, 2), duration_format(r1, d));
        return EDFCTL_EXIT_OK;
}

int admit_one(uint32_t pid, uint32_t tid, const char *group, const DlParams *p, uint64_t flags, uint64_t *ret_id) {
        _cleanup_(edfd_request_freep) edfd_request *q = NULL;
        edfd *e = NULL;
        uint64_t id = 0;
        int r, ex;

        if (request_make(pid, tid, group, p, flags, &q) < 0)
                return EDFCTL_EXIT_FAILED;
        ex = edfctl_connect(&e);
        if (ex != EDFCTL_EXIT_OK)
                return ex;
        r = edfd_admit(e, q, &id);
        if (r < 0)
                ex = edfctl_failed(e, r, "Admit");
        /* Before an exec: the command must not inherit the connection. */
        edfd_close(e);
        if (ex == EDFCTL_EXIT_OK && ret_id)
                *ret_id = id;
        return ex;
}

int verb_admit(const Args *a) {
        /* "" asks for edfd's default group (default-group: in its configuration, else "/"). */
        const char *group = a->group ?: "";
        int targets = !!(a->given & ARG_TID) + !!(a->given & ARG_PID) + !!a->command;
        uint64_t flags = 0, id = 0, startup = 0;
        uint32_t pid = 0, tid = 0;
        DlParams p = {};
        int r, ex;

        if (targets == 0)
                return usage_error(a, "say what to admit: -t TID, -p PID or -- COMMAND");
        if (targets > 1)
                return usage_error(a, "-t TID, -p PID and -- COMMAND exclude each other; give one");
        if (a->command && !a->command[0])
                return usage_error(a, "no command after --");
        if (a->group && *a->group == '\0')
                return usage_invalid("group", a->group, "is empty (leave -g out for edfd's default group)");
        if (a->command && (a->given & ARG_SPLIT))
                return usage_error(a, "--split needs -t TID or -p PID: a command is one thread, a split needs two");
        if ((a->given & ARG_STARTUP) && !a->command)
                return usage_error(a, "--startup is for -- COMMAND: a running thread has started already");
        if (a->given & ARG_STARTUP) {
                ex = parse_duration_arg("startup bound", a->startup, &startup);
                if (ex != EDFCTL_EXIT_OK)
                        return ex;
                if (startup == 0 || startup > 3600 * NSEC_PER_SEC)
                        return usage_invalid("startup bound", a->startup, "is not between 1ns and 1h");
        }
        ex = admit_params(a, &p);
        if (ex != EDFCTL_EXIT_OK)
                return ex;

        if (a->given & ARG_RECLAIM)
                flags |= EDFD_ADMIT_RECLAIM;
        if (a->given & ARG_OVERRUN_SIGNAL)
                flags |= EDFD_ADMIT_OVERRUN_SIGNAL;
        if (a->given & ARG_MOVE)
                flags |= EDFD_ADMIT_MOVE;

        if (a->command) {
                pid = (uint32_t) getpid();
                tid = (uint32_t) gettid();
        } else if (a->given & ARG_TID) {
                ex = parse_pid_arg("thread id", a->tid, &tid);
                if (ex != EDFCTL_EXIT_OK)
                        return ex;
                r = proc_thread_tgid(tid, &pid);
                if (r == -ESRCH) {
                        fprintf(stderr, "edfctl: no such thread: %" PRIu32 "\n", tid);
                        return EDFCTL_EXIT_FAILED;
                }
                if (r < 0) {
                        fprintf(stderr, "edfctl: cannot find the process of thread %" PRIu32 ": %s\n", tid,
                                strerror(-r));
                        return EDFCTL_EXIT_FAILED;
                }
        } else {
                ex = parse_pid_arg("process id", a->pid, &pid);
                if (ex != EDFCTL_EXIT_OK)
                        return ex;
                tid = pid;
        }

        if (a->given & ARG_SPLIT) {
                uint32_t tid2, pid2;
                ex = parse_pid_arg("second thread id", a->split, &tid2);
                if (ex != EDFCTL_EXIT_OK)
                        return ex;
                r = proc_thread_tgid(tid2, &pid2);
                if (r < 0 || pid2 != pid) {
                        fprintf(stderr, "edfctl: thread %" PRIu32 " is not a thread of process %" PRIu32 "\n", tid2, pid);
                        return EDFCTL_EXIT_FAILED;
                }
                return admit_split(pid, tid, tid2, group, &p, flags);
        }
        if (a->command && (a->given & ARG_STARTUP))
                return admit_command_after_startup(a->command, startup, group, &p, flags);
        /* For a command: edfctl's own thread, which libedfd keeps runnable while edfd answers. */
        ex = admit_one(pid, tid, group, &p, flags, &id);
        if (ex != EDFCTL_EXIT_OK)
                return ex;

        if (a->command) {
                execvp(a->command[0], a->command);
                r = errno;
                fprintf(stderr, "edfctl: cannot execute %s: %s\n", tty(a->command[0]), strerror(r));
                return r == ENOENT ? EDFCTL_EXIT_EXEC_NOT_FOUND : EDFCTL_EXIT_EXEC_FAILED;
        }
        printf("%" PRIu64 "\n", id);
        return EDFCTL_EXIT_OK;
}

/* --- release --- */

int verb_release(const Args *a) {
        _cleanup_(edfd_closep) edfd *e = NULL;
        int targets = !!(a->given & ARG_TID) + !!(a->given & ARG_PID) + (a->n_positional > 0);
        const char *reason = NULL;
        uint32_t pid = 0, tid = 0;
        uint64_t id = 0;
        int r, ex;

        if (targets == 0)
                return usage_error(a, "say what to release: ID, -t TID or -p PID");
        if (targets > 1)
                return usage_error(a, "ID, -t TID and -p PID exclude each other; give one");
        if (a->n_positional > 0) {
                if (parse_u64(a->positional[0], &id, &reason) < 0)
                        return usage_invalid("reservation id", a->positional[0], reason);
                if (id == 0)
                        return usage_invalid("reservation id", a->positional[0], "is 0 (ids start at 1)");
        } else if (a->given & ARG_TID) {
                ex = parse_pid_arg("thread id", a->tid, &tid);
                if (ex != EDFCTL_EXIT_OK)
                        return ex;
        } else {
                ex = parse_pid_arg("process id", a->pid, &pid);
                if (ex != EDFCTL_EXIT_OK)
                        return ex;
        }

        ex = edfctl_connect(&e);
        if (ex != EDFCTL_EXIT_OK)
                return ex;
        if (id)
                r = edfd_release(e, id);
        else if (tid)
                r = edfd_release_thread(e, (pid_t) tid);
        else
                r = edfd_release_process(e, (pid_t) pid);
        if (r < 0)
                return edfctl_failed(e, r, id ? "Release" : tid ? "ReleaseThread" : "ReleaseProcess");
        if (pid && r == 0) {
                fprintf(stderr, "edfctl: process %" PRIu32 " holds no reservation\n", pid);
                return EDFCTL_EXIT_FAILED;
        }
        return EDFCTL_EXIT_OK;
}

/* --- group --- */

static int group_size(const Args *a, uint64_t *ret_runtime, uint64_t *ret_period) {
        const char *reason = NULL;
        uint64_t runtime, period;
        int ex;

        if ((a->given & ARG_BANDWIDTH) && (a->given & (ARG_RUNTIME | ARG_PERIOD)))
                return usage_error(a, "--bandwidth excludes -T/--runtime and -P/--period");
        if (a->given & ARG_BANDWIDTH) {
                if (percent_parse(a->bandwidth, &runtime, &reason) < 0)
                        return usage_invalid("bandwidth", a->bandwidth, reason);
                if (runtime == 0)
                        return usage_invalid("bandwidth", a->bandwidth, "is 0 (a group needs some bandwidth)");
                period = PERCENT_PERIOD_NS;
        } else {
                if (!(a->given & (ARG_RUNTIME | ARG_PERIOD)))
                        return usage_error(a, "the size is missing: give -T RUNTIME -P PERIOD, or --bandwidth PERCENT");
                if (!(a->given & ARG_RUNTIME))
                        return usage_error(a, "the runtime is missing: give -T RUNTIME");
                if (!(a->given & ARG_PERIOD))
                        return usage_error(a, "the period is missing: give -P PERIOD");
                ex = parse_duration_arg("runtime", a->runtime, &runtime);
                if (ex != EDFCTL_EXIT_OK)
                        return ex;
                ex = parse_duration_arg("period", a->period, &period);
                if (ex != EDFCTL_EXIT_OK)
                        return ex;
                if (runtime == 0)
                        return usage_invalid("runtime", a->runtime, "is 0 (a group needs some bandwidth)");
                if (period == 0)
                        return usage_invalid("period", a->period, "is 0");
        }
        *ret_runtime = runtime;
        *ret_period = period;
        return EDFCTL_EXIT_OK;
}

int verb_group(const Args *a) {
        _cleanup_(edfd_closep) edfd *e = NULL;
        const char *path = a->positional[0];
        uint64_t runtime = 0, period = 0;
        bool remove = strcmp(a->subverb, "remove") == 0, create = strcmp(a->subverb, "create") == 0;
        int r, ex;

        if (*path == '\0')
                return usage_invalid("group path", path, "is empty");
        if (!remove) {
                ex = group_size(a, &runtime, &period);
                if (ex != EDFCTL_EXIT_OK)
                        return ex;
        }
        ex = edfctl_connect(&e);
        if (ex != EDFCTL_EXIT_OK)
                return ex;
        r = remove ? edfd_group_remove(e, path)
            : create ? edfd_group_create(e, path, runtime, period)
                     : edfd_group_set(e, path, runtime, period);
        if (r < 0)
                return edfctl_failed(e, r, remove ? "RemoveGroup" : create ? "CreateGroup" : "SetGroup");
        return EDFCTL_EXIT_OK;
}

/* --- reload --- */

int verb_reload(const Args *a) {
        _cleanup_(edfd_closep) edfd *e = NULL;
        int r, ex;

        ex = edfctl_connect(&e);
        if (ex != EDFCTL_EXIT_OK)
                return ex;
        r = edfd_reload(e);
        return r < 0 ? edfctl_failed(e, r, "Reload") : EDFCTL_EXIT_OK;
}

/* --- the command line --- */

enum {
        OPT_VERSION = 0x100,
        OPT_JSON,
        OPT_RECLAIM,
        OPT_OVERRUN_SIGNAL,
        OPT_MOVE,
        OPT_BANDWIDTH,
        OPT_WORK,
        OPT_MARGIN,
        OPT_CPUS,
        OPT_CAPACITY,
        OPT_SERVER,
        OPT_FIT,
        OPT_ORDER,
        OPT_SPLIT,
        OPT_STARTUP,
        OPT_OVERHEAD,
        OPT_DURATION,
        OPT_LIVE,
};

/* Record a value option; each may be given once. */
static int set_value(Args *a, unsigned bit, const char **slot, const char *value) {
        if (a->given & bit) {
                fprintf(stderr, "edfctl: %s given twice\n", option_name(bit));
                return EDFCTL_EXIT_USAGE;
        }
        a->given |= bit;
        *slot = value;
        return EDFCTL_EXIT_OK;
}

/* Fill a from argv (positional must have room for argc entries). --help and --version only set
 * *ret_help and *ret_version: main() decides once the verb is known. Returns EDFCTL_EXIT_OK, or
 * EDFCTL_EXIT_USAGE after printing why. */
static int parse_argv(int argc, char *argv[], Args *a, char **positional, bool *ret_help, bool *ret_version) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, OPT_VERSION },
                { "json", no_argument, NULL, OPT_JSON },
                { "group", required_argument, NULL, 'g' },
                { "runtime", required_argument, NULL, 'T' },
                { "deadline", required_argument, NULL, 'D' },
                { "period", required_argument, NULL, 'P' },
                { "tid", required_argument, NULL, 't' },
                { "pid", required_argument, NULL, 'p' },
                { "reclaim", no_argument, NULL, OPT_RECLAIM },
                { "overrun-signal", no_argument, NULL, OPT_OVERRUN_SIGNAL },
                { "move", no_argument, NULL, OPT_MOVE },
                { "bandwidth", required_argument, NULL, OPT_BANDWIDTH },
                { "work", required_argument, NULL, OPT_WORK },
                { "margin", required_argument, NULL, OPT_MARGIN },
                { "cpus", required_argument, NULL, OPT_CPUS },
                { "capacity", required_argument, NULL, OPT_CAPACITY },
                { "server", required_argument, NULL, OPT_SERVER },
                { "fit", required_argument, NULL, OPT_FIT },
                { "order", required_argument, NULL, OPT_ORDER },
                { "split", required_argument, NULL, OPT_SPLIT },
                { "startup", required_argument, NULL, OPT_STARTUP },
                { "overhead", required_argument, NULL, OPT_OVERHEAD },
                { "duration", required_argument, NULL, OPT_DURATION },
                { "live", no_argument, NULL, OPT_LIVE },
                {}
        };
        int c, ex = EDFCTL_EXIT_OK, last_optarg = -1;
        size_t n = 0;

        /* "-": every argument in order (non-options as code 1), whatever POSIXLY_CORRECT says, and
         * nothing permuted, so "--" keeps its place and what follows it is the command. */
        opterr = 1;
        while ((c = getopt_long(argc, argv, "-hg:T:D:P:t:p:", options, NULL)) >= 0) {
                if (optarg)
                        last_optarg = optind - 1;
                switch (c) {
                case 1:
                        positional[n++] = optarg;
                        last_optarg = -1;
                        break;
                case 'h':
                        *ret_help = true;
                        break;
                case OPT_VERSION:
                        *ret_version = true;
                        break;
                case OPT_JSON:
                        a->given |= ARG_JSON;
                        break;
                case 'g':
                        ex = set_value(a, ARG_GROUP, &a->group, optarg);
                        break;
                case 'T':
                        ex = set_value(a, ARG_RUNTIME, &a->runtime, optarg);
                        break;
                case 'D':
                        ex = set_value(a, ARG_DEADLINE, &a->deadline, optarg);
                        break;
                case 'P':
                        ex = set_value(a, ARG_PERIOD, &a->period, optarg);
                        break;
                case 't':
                        ex = set_value(a, ARG_TID, &a->tid, optarg);
                        break;
                case 'p':
                        ex = set_value(a, ARG_PID, &a->pid, optarg);
                        break;
                case OPT_RECLAIM:
                        a->given |= ARG_RECLAIM;
                        break;
                case OPT_OVERRUN_SIGNAL:
                        a->given |= ARG_OVERRUN_SIGNAL;
                        break;
                case OPT_MOVE:
                        a->given |= ARG_MOVE;
                        break;
                case OPT_BANDWIDTH:
                        ex = set_value(a, ARG_BANDWIDTH, &a->bandwidth, optarg);
                        break;
                case OPT_WORK:
                        ex = set_value(a, ARG_WORK, &a->work, optarg);
                        break;
                case OPT_MARGIN:
                        ex = set_value(a, ARG_MARGIN, &a->margin, optarg);
                        break;
                case OPT_CPUS:
                        ex = set_value(a, ARG_CPUS, &a->cpus, optarg);
                        break;
                case OPT_CAPACITY:
                        ex = set_value(a, ARG_CAPACITY, &a->capacity, optarg);
                        break;
                case OPT_SERVER:
                        ex = set_value(a, ARG_SERVER, &a->server, optarg);
                        break;
                case OPT_FIT:
                        ex = set_value(a, ARG_FIT, &a->fit, optarg);
                        break;
                case OPT_ORDER:
                        ex = set_value(a, ARG_ORDER, &a->order, optarg);
                        break;
                case OPT_SPLIT:
                        ex = set_value(a, ARG_SPLIT, &a->split, optarg);
                        break;
                case OPT_STARTUP:
                        ex = set_value(a, ARG_STARTUP, &a->startup, optarg);
                        break;
                case OPT_OVERHEAD:
                        ex = set_value(a, ARG_OVERHEAD, &a->overhead, optarg);
                        break;
                case OPT_DURATION:
                        ex = set_value(a, ARG_DURATION, &a->duration, optarg);
                        break;
                case OPT_LIVE:
                        a->given |= ARG_LIVE;
                        break;
                default:
                        /* getopt_long() printed what was wrong. */
                        fputs("edfctl: see edfctl --help\n", stderr);
                        return EDFCTL_EXIT_USAGE;
                }
                if (ex != EDFCTL_EXIT_OK)
                        return ex;
        }
        /* getopt_long() stopped at "--" (unless "--" was an option's value) or at the end. */
        if (optind > 1 && optind - 1 != last_optarg && strcmp(argv[optind - 1], "--") == 0)
                a->command = argv + optind;
        else if (optind < argc)
                /* Cannot happen in "-" mode, but never drop an argument silently. */
                while (optind < argc)
                        positional[n++] = argv[optind++];

        a->positional = positional;
        a->n_positional = n;
        return EDFCTL_EXIT_OK;
}

static const Verb *verb_find(const char *name, const char *subverb) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (strcmp(verbs[i].name, name) == 0 && (!verbs[i].subverb || (subverb && strcmp(verbs[i].subverb, subverb) == 0)))
                        return &verbs[i];
        return NULL;
}

int main(int argc, char *argv[]) {
        _cleanup_free_ char **positional = NULL;
        bool want_help = false, want_version = false;
        Args a = {};
        const Verb *v;
        int ex;

        positional = calloc((size_t) argc + 1, sizeof *positional);
        if (!positional) {
                fputs("edfctl: out of memory\n", stderr);
                return EDFCTL_EXIT_FAILED;
        }
        ex = parse_argv(argc, argv, &a, positional, &want_help, &want_version);
        if (ex != EDFCTL_EXIT_OK)
                return ex;
        if (want_version) {
                printf("edfctl %s\n", EDFD_VERSION);
                return EDFCTL_EXIT_OK;
        }

        if (a.n_positional == 0) {
                if (want_help) {
                        help();
                        return EDFCTL_EXIT_OK;
                }
                a.verb = "status";
        } else {
                a.verb = a.positional[0];
                a.positional++;
                a.n_positional--;
        }
        if (strcmp(a.verb, "help") == 0) {
                /* "edfctl help admit" is "edfctl admit --help". */
                if (a.n_positional == 0) {
                        help();
                        return EDFCTL_EXIT_OK;
                }
                want_help = true;
                a.verb = a.positional[0];
                a.positional++;
                a.n_positional--;
        }
        if (strcmp(a.verb, "group") == 0) {
                if (a.n_positional == 0) {
                        if (want_help) {
                                for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                                        if (verbs[i].subverb) {
                                                verb_help(&verbs[i]);
                                                putchar('\n');
                                        }
                                return EDFCTL_EXIT_OK;
                        }
                        return usage_error(&a, "group needs a subcommand: create, set or remove");
                }
                a.subverb = a.positional[0];
                a.positional++;
                a.n_positional--;
        }
        v = verb_find(a.verb, a.subverb);
        if (!v) {
                if (a.subverb)
                        return usage_error(NULL, "unknown group subcommand \"%s\" (create, set or remove)", a.subverb);
                return usage_error(NULL, "unknown command \"%s\"", a.verb);
        }
        if (want_help) {
                verb_help(v);
                return EDFCTL_EXIT_OK;
        }

        for (unsigned bit = 1; bit < (1u << _ARG_OPTION_COUNT); bit <<= 1)
                if ((a.given & bit) && !(v->options & bit))
                        return usage_error(&a, "%s does not apply to %s%s%s", option_name(bit), v->name,
                                           v->subverb ? " " : "", v->subverb ?: "");
        if (a.command && v->run != verb_admit && v->run != verb_run)
                return usage_error(&a, "only admit runs a command after -- (and run a program)");
        if (a.n_positional < v->min_args)
                return usage_error(&a, "%s%s%s needs %s", v->name, v->subverb ? " " : "", v->subverb ?: "",
                                   v->subverb ? "a group PATH" : "an argument");
        if (a.n_positional > v->max_args)
                return usage_error(&a, "unexpected argument \"%s\"%s", a.positional[v->max_args],
                                   v->run == verb_admit || v->run == verb_run ? " (put the command after --)" : "");

        return v->run(&a);
}

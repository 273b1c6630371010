/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A program that sets SCHED_DEADLINE itself, for test-run.c: run under `edfctl run`, it makes the
 * system calls the test asks for, one command a line on stdin, and answers each with one line on
 * stdout that starts with "= " and the call's errno (0: it succeeded). It never talks to edfd.
 *
 *   ready PID TID                          (printed at the start)
 *   set TID RUNTIME DEADLINE PERIOD FLAGS  sched_setattr(TID, SCHED_DEADLINE ...); TID 0: itself
 *   other TID                              sched_setattr(TID, SCHED_OTHER)
 *   sched                                  sched_setscheduler(0, SCHED_OTHER, {0})
 *   get                                    = 0 POLICY RUNTIME DEADLINE PERIOD FLAGS (sched_getattr)
 *   rewrite R1 R2 PERIOD                   sched_setattr(0, R1/PERIOD/PERIOD) while a second thread
 *                                          flips the struct between R1, R2 and SCHED_OTHER: = ERR
 *   loop N RUNTIME PERIOD                  N x (set, other): = 0 FAILED_SETS FAILED_OTHERS
 *   exitmid N RUNTIME PERIOD               N children, each of whose threads calls sched_setattr
 *                                          while the child exits: = 0 N
 *   bad                                    the malformed calls, one answer each: = ERR [SIZE]
 *   quit                                   exit 0 */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/sched-attr.h"

static int setattr_errno(pid_t tid, const void *attr, unsigned flags) {
        return syscall(SYS_sched_setattr, tid, attr, flags) < 0 ? errno : 0;
}

static SchedAttr dl(uint64_t runtime, uint64_t deadline, uint64_t period, uint64_t flags) {
        return (SchedAttr) { .size = sizeof(SchedAttr), .sched_policy = SCHED_DEADLINE, .sched_flags = flags,
                             .sched_runtime = runtime, .sched_deadline = deadline, .sched_period = period };
}

static const SchedAttr other = { .size = sizeof(SchedAttr), .sched_policy = SCHED_OTHER };

/* rewrite: the struct the main thread passes, and the thread that changes it under the call. */
static SchedAttr shared_attr;
static atomic_bool flipping;
static uint64_t flip_r1, flip_r2, flip_period;

static void *flipper(void *arg) {
        (void) arg;
        for (unsigned i = 0; atomic_load(&flipping); i++) {
                volatile SchedAttr *a = &shared_attr;
                switch (i % 3) {
                case 0:
                        a->sched_policy = SCHED_DEADLINE;
                        a->sched_runtime = flip_r1;
                        break;
                case 1:
                        a->sched_runtime = flip_r2;
                        break;
                default:
                        a->sched_policy = SCHED_OTHER;
                }
        }
        return NULL;
}

static void *exit_caller(void *arg) {
        const SchedAttr *a = arg;
        for (;;)
                (void) setattr_errno(0, a, 0);
        return NULL;
}

static void exitmid(unsigned n, uint64_t runtime, uint64_t period) {
        static SchedAttr a;
        a = dl(runtime, period, period, 0);
        for (unsigned i = 0; i < n; i++) {
                pid_t p = fork();
                if (p == 0) {
                        pthread_t t;
                        pthread_create(&t, NULL, exit_caller, &a);
                        /* exit at some point of the other thread's call: before, in, or after it */
                        for (volatile unsigned k = 0; k < (i * 7919u) % 20000u; k++)
                                ;
                        _exit(0);
                }
                if (p > 0)
                        while (waitpid(p, NULL, 0) < 0 && errno == EINTR)
                                ;
        }
        printf("= 0 %u\n", n);
}

/* The malformed calls, each answered with the errno and, for E2BIG, the size written back. */
static void bad(void) {
        SchedAttr a = dl(1000000, 10000000, 10000000, 0);
        void *unmapped = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        int e;

        a.size = 47;
        e = setattr_errno(0, &a, 0);
        printf("= %d %u\n", e, a.size); /* E2BIG, 56 written back */
        a.size = 4097;
        e = setattr_errno(0, &a, 0);
        printf("= %d %u\n", e, a.size); /* E2BIG, 56 */
        a.size = sizeof a;
        printf("= %d\n", setattr_errno(0, NULL, 0));          /* EINVAL */
        printf("= %d\n", setattr_errno(0, unmapped, 0));      /* EFAULT */
        a.sched_flags = 0x80;
        printf("= %d\n", setattr_errno(0, &a, 0));            /* EINVAL: unknown flag */
        a.sched_flags = 0;
        printf("= %d\n", setattr_errno(0, &a, 1));            /* EINVAL: flags argument */
        printf("= %d\n", setattr_errno(-1, &a, 0));           /* EINVAL: negative pid */
        a.sched_runtime = 20000000;
        printf("= %d\n", setattr_errno(0, &a, 0));            /* EINVAL: runtime above the deadline */
        munmap(unmapped, 4096);
}

int main(void) {
        char line[256];

        setvbuf(stdout, NULL, _IOLBF, 0);
        printf("ready %d %d\n", (int) getpid(), (int) gettid());
        while (fgets(line, sizeof line, stdin)) {
                unsigned long long t = 0, r = 0, d = 0, p = 0, f = 0, n = 0;
                char cmd[16] = "";

                if (sscanf(line, "%15s", cmd) != 1)
                        continue;
                if (strcmp(cmd, "set") == 0 && sscanf(line, "%*s %llu %llu %llu %llu %llu", &t, &r, &d, &p, &f) == 5) {
                        SchedAttr a = dl(r, d, p, f);
                        printf("= %d\n", setattr_errno((pid_t) t, &a, 0));
                } else if (strcmp(cmd, "other") == 0 && sscanf(line, "%*s %llu", &t) == 1)
                        printf("= %d\n", setattr_errno((pid_t) t, &other, 0));
                else if (strcmp(cmd, "sched") == 0) {
                        struct sched_param sp = { 0 };
                        printf("= %d\n", sched_setscheduler(0, SCHED_OTHER, &sp) < 0 ? errno : 0);
                } else if (strcmp(cmd, "get") == 0) {
                        SchedAttr a = {};
                        int e = syscall(SYS_sched_getattr, 0, &a, sizeof a, 0) < 0 ? errno : 0;
                        printf("= %d %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", e, a.sched_policy,
                               a.sched_runtime, a.sched_deadline, a.sched_period, a.sched_flags);
                } else if (strcmp(cmd, "rewrite") == 0 && sscanf(line, "%*s %llu %llu %llu", &r, &d, &p) == 3) {
                        pthread_t th;
                        int e;
                        flip_r1 = r;
                        flip_r2 = d;
                        flip_period = p;
                        shared_attr = dl(r, p, p, 0);
                        atomic_store(&flipping, true);
                        pthread_create(&th, NULL, flipper, NULL);
                        e = setattr_errno(0, &shared_attr, 0);
                        atomic_store(&flipping, false);
                        pthread_join(th, NULL);
                        printf("= %d\n", e);
                } else if (strcmp(cmd, "loop") == 0 && sscanf(line, "%*s %llu %llu %llu", &n, &r, &p) == 3) {
                        SchedAttr a = dl(r, p, p, 0);
                        unsigned long long bad_set = 0, bad_other = 0;
                        for (unsigned long long i = 0; i < n; i++) {
                                bad_set += setattr_errno(0, &a, 0) != 0;
                                bad_other += setattr_errno(0, &other, 0) != 0;
                        }
                        printf("= 0 %llu %llu\n", bad_set, bad_other);
                } else if (strcmp(cmd, "exitmid") == 0 && sscanf(line, "%*s %llu %llu %llu", &n, &r, &p) == 3)
                        exitmid((unsigned) n, r, p);
                else if (strcmp(cmd, "bad") == 0)
                        bad();
                else if (strcmp(cmd, "quit") == 0)
                        return 0;
                else
                        printf("= -1 unknown command\n");
        }
        return 0;
}

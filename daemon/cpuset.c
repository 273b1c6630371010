/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cpuset adapter (see cpuset.h). libcgroup does the v1 directories (create with values in
 * order, modify, delete); a move writes the tid to a tasks file edfd keeps open (write_id()); on v2
 * every file is written directly:
 * libcgroup has no call for cgroup.type or cpuset.cpus.partition, and cgroup.c's verdict on its v2
 * support holds (docs/design.md, "libcgroup, call by call"). Reads are direct on both. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/proc.h"
#include "basic/sched-attr.h"
#include "basic/strv.h"
#include "core/bandwidth.h"
#include "core/duration.h"
#include "cpuset.h"

/* v2: the cgroup a process was in before cpusets_move_in() took it into edfd-partitions (a path
 * below the mount, "/" for the root), so that cpusets_move_out() puts it back: a service's process
 * goes back into its service. In memory only: after a restart of edfd a release moves the process
 * to the root cgroup. */
typedef struct CpusetOrigin {
        pid_t pid;
        char *path;
} CpusetOrigin;

typedef struct CpusetFd {
        char *path;
        int fd;
} CpusetFd;

struct Cpusets {
        CpusetBackend backend;
        char *mount;
        char *unavailable;
        CpuMask present, online;
        CpuMask shared; /* v2: edfd-partitions' own CPUs */
        CpusetPartition *last; /* the states the last poll or apply saw */
        size_t n_last;
        CpusetOrigin *origins; /* v2: where each process moved in came from */
        size_t n_origins;
        CpusetFd *fds; /* the files of edfd's own cgroups that moves write, open (write_id()) */
        size_t n_fds;
};

const char *cpuset_backend_to_string(CpusetBackend b) {
        static const char *const names[] = { "none", "cgroup-v1", "cgroup-v2" };
        return (unsigned) b < ELEMENTSOF(names) ? names[b] : NULL;
}

const char *cpuset_state_to_string(CpusetState s) {
        static const char *const names[] = { "absent", "valid", "invalid" };
        return (unsigned) s < ELEMENTSOF(names) ? names[s] : NULL;
}

/* --- small file helpers --- */

static int read_text(const char *path, char *buf, size_t size) {
        size_t len;
        int r = proc_read_file(AT_FDCWD, path, 0, buf, size, &len);

        if (r < 0)
                return r;
        while (len > 0 && buf[len - 1] == '\n')
                buf[--len] = '\0';
        return 0;
}

static int read_mask(const char *path, CpuMask *ret) {
        char buf[CPU_LIST_MAX];
        int r = read_text(path, buf, sizeof buf);

        if (r < 0)
                return r;
        return cpu_mask_parse(buf, strlen(buf), ret, NULL) < 0 ? -EBADMSG : 0;
}

static int write_text(const char *path, const char *s) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        ssize_t n;
        int r = 0;

        if (fd < 0)
                return -errno;
        n = write(fd, s, strlen(s));
        if (n < 0)
                r = -errno;
        else if ((size_t) n != strlen(s))
                r = -EIO;
        close(fd);
        return r;
}

static void fds_close(Cpusets *c) {
        for (size_t i = 0; i < c->n_fds; i++) {
                close(c->fds[i].fd);
                free(c->fds[i].path);
        }
        free(c->fds);
        c->fds = NULL;
        c->n_fds = 0;
}

/* Write a pid or tid into a file of edfd's own cgroups (tasks, cgroup.threads, cgroup.procs): a
 * move is then one write(2). The file stays open from its first move until the layout changes
 * (cpusets_apply()): opening a kernfs file costs more than the move itself on the admission path.
 * A file whose cgroup went away meanwhile (ENODEV) is opened again once, which says ENOENT. */
static int write_id(Cpusets *c, const char *path, pid_t id) {
        char buf[24];
        int len = snprintf(buf, sizeof buf, "%d", (int) id);

        for (unsigned attempt = 0;; attempt++) {
                CpusetFd *f = NULL;
                ssize_t n;
                int r;

                for (size_t i = 0; i < c->n_fds && !f; i++)
                        if (strcmp(c->fds[i].path, path) == 0)
                                f = &c->fds[i];
                if (!f) {
                        CpusetFd *t = realloc(c->fds, (c->n_fds + 1) * sizeof(*t));
                        char *p = strdup(path);
                        int fd;

                        if (t)
                                c->fds = t;
                        if (!t || !p) {
                                free(p);
                                return -ENOMEM;
                        }
                        fd = open(path, O_WRONLY | O_CLOEXEC);
                        if (fd < 0) {
                                free(p);
                                return -errno;
                        }
                        f = &c->fds[c->n_fds++];
                        *f = (CpusetFd) { .path = p, .fd = fd };
                }
                n = write(f->fd, buf, (size_t) len);
                if (n == len)
                        return 0;
                r = n < 0 ? -errno : -EIO;
                if (r != -ENODEV || attempt > 0)
                        return r;
                close(f->fd);
                free(f->path);
                *f = c->fds[--c->n_fds];
        }
}

static char *path_of(const Cpusets *c, const char *name, const char *file) {
        char *p;

        if (asprintf(&p, "%s/%s%s%s%s%s", c->mount, CPUSET_DIR, name ? "/" : "", name ?: "", file ? "/" : "",
                     file ?: "") < 0)
                return NULL;
        return p;
}

static const char *mask_str(const CpuMask *m, char buf[static CPU_LIST_MAX]) {
        return cpu_mask_format(m, buf, CPU_LIST_MAX) ?: "?";
}

/* --- opening --- */

int cpusets_open(Cpusets **ret, const char *v1_mount, const char *v2_mount) {
        _cleanup_free_ Cpusets *c = calloc(1, sizeof(Cpusets));
        char path[PATH_MAX], buf[512];
        int r;

        if (!c)
                return -ENOMEM;
        v1_mount = v1_mount ?: CPUSET_V1_MOUNT_DEFAULT;
        v2_mount = v2_mount ?: CPUSET_V2_MOUNT_DEFAULT;
        if (read_mask("/sys/devices/system/cpu/present", &c->present) < 0 ||
            read_mask("/sys/devices/system/cpu/online", &c->online) < 0) {
                c->present = c->online = (CpuMask) {};
                cpu_mask_set(&c->present, 0);
                cpu_mask_set(&c->online, 0);
        }

        snprintf(path, sizeof path, "%s/tasks", v1_mount);
        if (access(path, F_OK) == 0) {
                snprintf(path, sizeof path, "%s/cpuset.cpu_exclusive", v1_mount);
                if (access(path, F_OK) == 0) {
                        c->backend = CPUSET_BACKEND_V1;
                        c->mount = strdup(v1_mount);
                }
        }
        if (c->backend == CPUSET_BACKEND_NONE) {
                snprintf(path, sizeof path, "%s/cgroup.controllers", v2_mount);
                r = read_text(path, buf, sizeof buf);
                if (r >= 0 && strstr(buf, "cpuset")) {
                        c->backend = CPUSET_BACKEND_V2;
                        c->mount = strdup(v2_mount);
                } else if (asprintf(&c->unavailable,
                                    "no cpuset controller: no cgroup v1 cpuset hierarchy at %s, and %s %s", v1_mount,
                                    v2_mount, r < 0 ? "is not a cgroup v2 hierarchy" : "does not offer cpuset") < 0)
                        return -ENOMEM;
        }
        if (c->backend != CPUSET_BACKEND_NONE && !c->mount)
                return -ENOMEM;
        if (c->backend == CPUSET_BACKEND_V1) {
                r = cgroup_init();
                if (r != 0) {
                        c->backend = CPUSET_BACKEND_NONE;
                        if (asprintf(&c->unavailable, "libcgroup cannot use the cpuset hierarchy at %s: %s",
                                     v1_mount, cgroup_strerror(r)) < 0)
                                return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(c);
        return 0;
}

Cpusets *cpusets_free(Cpusets *c) {
        if (!c)
                return NULL;
        free(c->mount);
        free(c->unavailable);
        free(c->last);
        for (size_t i = 0; i < c->n_origins; i++)
                free(c->origins[i].path);
        free(c->origins);
        fds_close(c);
        free(c);
        return NULL;
}

CpusetBackend cpusets_backend(const Cpusets *c) {
        return c->backend;
}

const char *cpusets_unavailable(const Cpusets *c) {
        return c->unavailable;
}

const CpuMask *cpusets_online(const Cpusets *c) {
        return &c->online;
}

void cpusets_set_shared(Cpusets *c, const CpuMask *shared) {
        c->shared = shared ? *shared : (CpuMask) {};
}

static CpusetMachine machine_of(const Cpusets *c) {
        return (CpusetMachine) {
                .backend = c->backend,
                .unavailable = c->unavailable,
                .present = c->present,
                .online = c->online,
                .shared = c->shared,
        };
}

/* --- checks --- */

static void foreign_free(CpusetForeign *f, size_t n) {
        for (size_t i = 0; i < n; i++)
                free((char *) f[i].path);
        free(f);
}

/* The top-level cpusets edfd does not own, with their CPUs (deeper ones hold a subset of their
 * top-level ancestor's). One whose cpus cannot be read is left out. */
static int read_foreign(const Cpusets *c, CpusetForeign **ret, size_t *ret_n) {
        CpusetForeign *f = NULL;
        size_t n = 0;
        DIR *d;
        int r = 0;

        d = opendir(c->mount);
        if (!d)
                return -errno;
        for (struct dirent *de; (de = readdir(d));) {
                _cleanup_free_ char *p = NULL, *dir = NULL;
                CpuMask theirs;
                CpusetForeign *nf;

                if (de->d_type != DT_DIR || de->d_name[0] == '.' || strcmp(de->d_name, CPUSET_DIR) == 0)
                        continue;
                if (asprintf(&dir, "%s/%s", c->mount, de->d_name) < 0 || asprintf(&p, "%s/cpuset.cpus", dir) < 0) {
                        dir = p = NULL;
                        r = -ENOMEM;
                        break;
                }
                if (read_mask(p, &theirs) < 0)
                        continue;
                nf = realloc(f, (n + 1) * sizeof(*f));
                if (!nf) {
                        r = -ENOMEM;
                        break;
                }
                f = nf;
                f[n++] = (CpusetForeign) { .path = TAKE_PTR(dir), .cpus = theirs };
        }
        closedir(d);
        if (r < 0) {
                foreign_free(f, n);
                return r;
        }
        *ret = f;
        *ret_n = n;
        return 0;
}

int cpusets_check(Cpusets *c, const CpusetSpec *specs, size_t n, char ***ret_errors, char ***ret_notes) {
        _cleanup_(strv_freep) char **errors = NULL, **notes = NULL;
        CpusetMachine m = machine_of(c);
        CpusetForeign *foreign = NULL;
        size_t n_foreign = 0;
        int r;

        if (n > 0 && c->backend != CPUSET_BACKEND_NONE) {
                r = read_foreign(c, &foreign, &n_foreign);
                if (r < 0)
                        return r;
        }
        r = cpuset_layout_check(&m, specs, n, foreign, n_foreign, &errors, &notes);
        foreign_free(foreign, n_foreign);
        if (r < 0)
                return r;
        if (ret_notes)
                *ret_notes = TAKE_PTR(notes);
        if (errors) {
                if (ret_errors)
                        *ret_errors = TAKE_PTR(errors);
                return -EINVAL;
        }
        return 0;
}

/* --- reading the owned partitions --- */

static bool name_ok(const char *s) {
        size_t len = strlen(s);

        if (len == 0 || len > CPUSET_NAME_MAX || s[0] == '_' || s[0] == '.' || s[0] == '-')
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
                      *p == '.' || *p == '-'))
                        return false;
        return true;
}

static unsigned count_lines(const char *path) {
        char buf[65536];
        unsigned n = 0;

        if (proc_read_file(AT_FDCWD, path, PROC_READ_TRUNCATE, buf, sizeof buf, NULL) < 0)
                return 0;
        for (const char *p = buf; *p; p++)
                n += *p == '\n';
        return n;
}

static int read_flag(const char *dir, const char *file) {
        char path[PATH_MAX], buf[16];
        int r;

        snprintf(path, sizeof path, "%s/%s", dir, file);
        r = read_text(path, buf, sizeof buf);
        if (r < 0)
                return r;
        return strcmp(buf, "1") == 0;
}

static void read_one(const Cpusets *c, const char *name, CpusetPartition *p) {
        _cleanup_free_ char *dir = path_of(c, name, NULL);
        char path[PATH_MAX], buf[256];

        *p = (CpusetPartition) { .state = CPUSET_STATE_INVALID };
        snprintf(p->name, sizeof p->name, "%s", name);
        if (!dir) {
                snprintf(p->reason, sizeof p->reason, "out of memory");
                return;
        }
        if (access(dir, F_OK) < 0) {
                p->state = CPUSET_STATE_ABSENT;
                return;
        }
        snprintf(path, sizeof path, "%s/cpuset.cpus", dir);
        (void) read_mask(path, &p->cpus);
        snprintf(path, sizeof path, "%s/%s", dir, c->backend == CPUSET_BACKEND_V1 ? "tasks" : "cgroup.threads");
        p->n_tasks = count_lines(path);
        if (cpu_mask_empty(&p->cpus)) {
                snprintf(p->reason, sizeof p->reason, "has no CPU");
                return;
        }
        if (c->backend == CPUSET_BACKEND_V2) {
                snprintf(path, sizeof path, "%s/cpuset.cpus.partition", dir);
                if (read_text(path, buf, sizeof buf) < 0)
                        snprintf(p->reason, sizeof p->reason, "cpuset.cpus.partition cannot be read");
                else if (strcmp(buf, "root") == 0)
                        p->state = CPUSET_STATE_VALID;
                else
                        snprintf(p->reason, sizeof p->reason, "cpuset.cpus.partition reads \"%s\"", buf);
                return;
        }
        if (read_flag(dir, "cpuset.cpu_exclusive") != 1)
                snprintf(p->reason, sizeof p->reason, "not cpu_exclusive");
        else if (read_flag(dir, "cpuset.sched_load_balance") != 1)
                snprintf(p->reason, sizeof p->reason, "its sched_load_balance is 0");
        else if (read_flag(c->mount, "cpuset.sched_load_balance") != 0)
                snprintf(p->reason, sizeof p->reason, "the root cpuset balances every CPU (its sched_load_balance is 1)");
        else
                p->state = CPUSET_STATE_VALID;
}

static int list_names(const Cpusets *c, char ***ret) {
        _cleanup_free_ char *dir = path_of(c, NULL, NULL);
        _cleanup_(strv_freep) char **names = NULL;
        DIR *d;
        int r = 0;

        if (!dir)
                return -ENOMEM;
        d = opendir(dir);
        if (!d) {
                if (errno != ENOENT)
                        return -errno;
                *ret = NULL;
                return 0;
        }
        for (struct dirent *de; r >= 0 && (de = readdir(d));)
                if (de->d_type == DT_DIR && name_ok(de->d_name))
                        r = strv_appendf(&names, "%s", de->d_name);
        closedir(d);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(names);
        return 0;
}

/* What every deadline thread holds, by where it is: bw[i] for the owned partition names[i], bw[n]
 * for everything else, bw[n + 1] for edfd-partitions itself (v2: its shared CPUs). */
typedef struct Scan {
        const Cpusets *c;
        char *const *names;
        size_t n;
        uint64_t *bw;
} Scan;

static int scan_thread(const ProcEntry *e, void *userdata) {
        Scan *s = userdata;
        SchedAttr attr = {};
        char buf[PATH_MAX], path[64];
        const char *rel;
        uint64_t bw;
        size_t slot = s->n;

        if (sched_getattr_raw(e->tid, &attr, 0) < 0 || attr.sched_policy != SCHED_DEADLINE)
                return 0;
        if (bw_of(attr.sched_runtime, attr.sched_period ?: attr.sched_deadline, &bw) < 0)
                return 0;
        snprintf(path, sizeof path, "/proc/%d/task/%d/cpuset", (int) e->pid, (int) e->tid);
        if (read_text(path, buf, sizeof buf) < 0)
                buf[0] = '\0';
        if (strcmp(buf, "/" CPUSET_DIR) == 0 && s->c->backend == CPUSET_BACKEND_V2)
                slot = s->n + 1;
        else if (strncmp(buf, "/" CPUSET_DIR "/", strlen(CPUSET_DIR) + 2) == 0) {
                rel = buf + strlen(CPUSET_DIR) + 2;
                for (size_t i = 0; i < s->n; i++)
                        if (strcmp(rel, s->names[i]) == 0)
                                slot = i;
        }
        if (bw_add(s->bw[slot], bw, &s->bw[slot]) < 0)
                s->bw[slot] = UINT64_MAX;
        return 0;
}

static int scan(const Cpusets *c, char *const *names, size_t n, uint64_t *bw) {
        Scan s = { .c = c, .names = names, .n = n, .bw = bw };

        memset(bw, 0, (n + 2) * sizeof(uint64_t));
        return proc_walk_all_threads(scan_thread, &s);
}

int cpusets_list(Cpusets *c, CpusetPartition **ret, size_t *ret_n) {
        _cleanup_(strv_freep) char **names = NULL;
        _cleanup_free_ uint64_t *bw = NULL;
        CpusetPartition *ps;
        size_t n;
        int r;

        if (c->backend == CPUSET_BACKEND_NONE) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        r = list_names(c, &names);
        if (r < 0)
                return r;
        n = strv_length(names);
        bw = calloc(n + 2, sizeof(uint64_t));
        ps = calloc(MAX(n, (size_t) 1), sizeof(CpusetPartition));
        if (!bw || !ps) {
                free(ps);
                return -ENOMEM;
        }
        (void) scan(c, names, n, bw);
        for (size_t i = 0; i < n; i++) {
                read_one(c, names[i], &ps[i]);
                ps[i].dl_bw = bw[i];
        }
        if (n == 0) {
                free(ps);
                ps = NULL;
        }
        *ret = ps;
        *ret_n = n;
        return 0;
}

static void remember(Cpusets *c) {
        CpusetPartition *ps = NULL;
        size_t n = 0;

        if (cpusets_list(c, &ps, &n) < 0)
                return;
        free(c->last);
        c->last = ps;
        c->n_last = n;
}

int cpusets_poll(Cpusets *c, CpusetChangeFn cb, void *userdata) {
        CpusetPartition *ps = NULL;
        size_t n = 0;
        int changes = 0, r;

        r = cpusets_list(c, &ps, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                CpusetState was = CPUSET_STATE_ABSENT;

                for (size_t j = 0; j < c->n_last; j++)
                        if (strcmp(c->last[j].name, ps[i].name) == 0)
                                was = c->last[j].state;
                if (was != ps[i].state) {
                        changes++;
                        if (cb)
                                cb(&ps[i], was, userdata);
                }
        }
        for (size_t j = 0; j < c->n_last; j++) {
                bool found = false;

                for (size_t i = 0; i < n && !found; i++)
                        found = strcmp(c->last[j].name, ps[i].name) == 0;
                if (!found && c->last[j].state != CPUSET_STATE_ABSENT) {
                        CpusetPartition gone = c->last[j];

                        gone.state = CPUSET_STATE_ABSENT;
                        snprintf(gone.reason, sizeof gone.reason, "its directory is gone");
                        changes++;
                        if (cb)
                                cb(&gone, c->last[j].state, userdata);
                }
        }
        free(c->last);
        c->last = ps;
        c->n_last = n;
        return changes;
}

/* --- v1 writes, through libcgroup --- */

static int lcg_error(int r) {
        if (r == 0)
                return 0;
        if (r == ECGOTHER)
                return -(cgroup_get_last_errno() ?: EIO);
        return -EIO;
}

/* Create or modify the v1 cpuset REL (relative to the hierarchy) with the given values in order. */
static int v1_set(const char *rel, bool create, const char *const *kv) {
        struct cgroup *cg = cgroup_new_cgroup(rel);
        struct cgroup_controller *ctl;
        int r;

        if (!cg)
                return -ENOMEM;
        ctl = cgroup_add_controller(cg, "cpuset");
        if (!ctl) {
                cgroup_free(&cg);
                return -ENOMEM;
        }
        for (size_t i = 0; kv[i]; i += 2)
                if (cgroup_add_value_string(ctl, kv[i], kv[i + 1]) != 0) {
                        cgroup_free(&cg);
                        return -ENOMEM;
                }
        r = lcg_error(create ? cgroup_create_cgroup(cg, 0) : cgroup_modify_cgroup(cg));
        cgroup_free(&cg);
        return r;
}

/* A libcgroup handle on the v1 cpuset REL with its controller, or NULL (out of memory). */
static struct cgroup *v1_handle(const char *rel) {
        struct cgroup *cg = cgroup_new_cgroup(rel);

        if (cg && !cgroup_add_controller(cg, "cpuset"))
                cgroup_free(&cg);
        return cg;
}

static int v1_delete(const char *rel) {
        struct cgroup *cg = v1_handle(rel);
        int r;

        if (!cg)
                return -ENOMEM;
        /* 0: do not migrate tasks to the parent (only empty partitions are removed). */
        r = lcg_error(cgroup_delete_cgroup(cg, 0));
        cgroup_free(&cg);
        return r;
}

/* --- applying a layout --- */

static const CpusetSpec *find_spec(const CpusetSpec *specs, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(specs[i].name, name) == 0)
                        return &specs[i];
        return NULL;
}

/* Would the deadline threads of each root domain of the layout specs fit? */
static int check_commit(Cpusets *c, const CpusetSpec *specs, size_t n, char *const *existing, uint64_t per_cpu_bw,
                        char **ret_error) {
        size_t m = strv_length(existing);
        _cleanup_free_ uint64_t *bw = calloc(m + 2, sizeof(uint64_t));
        CpusetMachine machine = machine_of(c);
        int r;

        if (!bw)
                return -ENOMEM;
        if (per_cpu_bw == UINT64_MAX)
                return 0;
        r = scan(c, existing, m, bw);
        if (r < 0)
                return r;
        return cpuset_layout_fits(&machine, specs, n, existing, m, bw, per_cpu_bw, ret_error);
}

static int fail(char **ret_error, int r, const char *fmt, ...) _printf_(3, 4);
static int fail(char **ret_error, int r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(ret_error, fmt, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
        return r;
}

static int root_mems(const Cpusets *c, char buf[static 256]) {
        char path[PATH_MAX];

        snprintf(path, sizeof path, "%s/cpuset.mems", c->mount);
        return read_text(path, buf, 256);
}

static int v1_write_root_balance(Cpusets *c, bool on) {
        static const char *const on_kv[] = { "cpuset.sched_load_balance", "1", NULL };
        static const char *const off_kv[] = { "cpuset.sched_load_balance", "0", NULL };

        (void) c;
        return v1_set("/", false, on ? on_kv : off_kv);
}

/* v1: make the owned directory hold `all` (it must be exclusive and unbalanced), creating it. */
static int v1_ensure_dir(Cpusets *c, const CpuMask *all, const char *mems, char **ret_error) {
        char l[CPU_LIST_MAX];
        const char *const kv[] = { "cpuset.cpus", mask_str(all, l), "cpuset.mems", mems, "cpuset.cpu_exclusive", "1",
                                   "cpuset.sched_load_balance", "0", NULL };
        _cleanup_free_ char *dir = path_of(c, NULL, NULL);
        int r;

        if (!dir)
                return -ENOMEM;
        r = v1_set("/" CPUSET_DIR, access(dir, F_OK) < 0, kv);
        if (r < 0)
                return fail(ret_error, r, "cannot make %s hold cpus %s: %s", dir, l, strerror(-r));
        return 0;
}

static int v1_apply(Cpusets *c, const CpusetSpec *specs, size_t n, char *const *existing, char ***notes,
                    char **ret_error) {
        char mems[256], l[CPU_LIST_MAX], rel[PATH_MAX];
        CpuMask all = {}, grown;
        int r;

        r = root_mems(c, mems);
        if (r < 0)
                return fail(ret_error, r, "cannot read %s/cpuset.mems: %s", c->mount, strerror(-r));
        (void) cpuset_layout_union(specs, n, &all);

        /* Removals first (they free CPUs), then the directory grows to the union of what stays and
         * what comes, then the new partitions, then it shrinks to the union. */
        for (size_t i = 0; existing && existing[i]; i++) {
                if (find_spec(specs, n, existing[i]))
                        continue;
                snprintf(rel, sizeof rel, "/%s/%s", CPUSET_DIR, existing[i]);
                r = v1_delete(rel);
                if (r < 0)
                        return fail(ret_error, r, "cannot remove %s%s: %s", c->mount, rel, strerror(-r));
                (void) strv_appendf(notes, "removed partition %s", existing[i]);
        }
        if (n == 0) {
                _cleanup_free_ char *dir = path_of(c, NULL, NULL);

                if (!dir)
                        return -ENOMEM;
                if (access(dir, F_OK) < 0)
                        return 0;
                r = v1_write_root_balance(c, true);
                if (r < 0)
                        return fail(ret_error, r, "cannot turn the root cpuset's balancing back on: %s", strerror(-r));
                r = v1_delete("/" CPUSET_DIR);
                if (r < 0)
                        return fail(ret_error, r, "cannot remove %s: %s", dir, strerror(-r));
                (void) strv_appendf(notes, "no partition left: the root cpuset balances every CPU again");
                return 0;
        }
        grown = all;
        for (size_t i = 0; existing && existing[i]; i++) {
                CpusetPartition p;
                const CpusetSpec *s = find_spec(specs, n, existing[i]);

                if (!s)
                        continue;
                read_one(c, existing[i], &p);
                cpu_mask_or(&grown, &p.cpus);
        }
        r = v1_ensure_dir(c, &grown, mems, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                CpusetPartition p;
                const char *const kv[] = { "cpuset.cpus", mask_str(&specs[i].cpus, l), "cpuset.mems", mems,
                                           "cpuset.cpu_exclusive", "1", "cpuset.sched_load_balance", "1", NULL };
                bool exists;

                read_one(c, specs[i].name, &p);
                exists = p.state != CPUSET_STATE_ABSENT;
                if (exists && memcmp(&p.cpus, &specs[i].cpus, sizeof p.cpus) == 0 && p.reason[0] == '\0')
                        continue;
                snprintf(rel, sizeof rel, "/%s/%s", CPUSET_DIR, specs[i].name);
                r = v1_set(rel, !exists, kv);
                if (r < 0)
                        return fail(ret_error, r, "cannot make partition %s (cpus %s): %s%s", specs[i].name, l,
                                    strerror(-r),
                                    r == -EINVAL ? " (the kernel refuses an exclusive cpuset that overlaps another)" : "");
                (void) strv_appendf(notes, "%s partition %s on cpus %s", exists ? "repaired" : "created",
                                    specs[i].name, l);
        }
        r = v1_ensure_dir(c, &all, mems, ret_error);
        if (r < 0)
                return r;
        if (read_flag(c->mount, "cpuset.sched_load_balance") != 0) {
                r = v1_write_root_balance(c, false);
                if (r < 0)
                        return fail(ret_error, r, "cannot turn the root cpuset's balancing off: %s", strerror(-r));
        }
        return 0;
}

/* --- v2 writes, direct --- */

static int v2_write(const Cpusets *c, const char *name, const char *file, const char *value, char **ret_error) {
        _cleanup_free_ char *p = path_of(c, name, file);
        int r;

        if (!p)
                return -ENOMEM;
        r = write_text(p, value);
        if (r < 0)
                return fail(ret_error, r, "cannot write \"%s\" to %s: %s", value, p, strerror(-r));
        return 0;
}

static int v2_apply(Cpusets *c, const CpusetSpec *specs, size_t n, char *const *existing, char ***notes,
                    char **ret_error) {
        _cleanup_free_ char *dir = path_of(c, NULL, NULL);
        char path[PATH_MAX], l[CPU_LIST_MAX];
        CpuMask all = {}, grown;
        int r;

        if (!dir)
                return -ENOMEM;
        (void) cpuset_layout_union(specs, n, &all);
        {
                CpusetMachine machine = machine_of(c);
                CpuMask shared = cpuset_layout_shared(&machine, n);

                cpu_mask_or(&all, &shared);
        }
        for (size_t i = 0; existing && existing[i]; i++) {
                _cleanup_free_ char *p = NULL;

                if (find_spec(specs, n, existing[i]))
                        continue;
                (void) v2_write(c, existing[i], "cpuset.cpus.partition", "member", NULL);
                p = path_of(c, existing[i], NULL);
                if (!p)
                        return -ENOMEM;
                if (rmdir(p) < 0)
                        return fail(ret_error, -errno, "cannot remove %s: %s", p, strerror(errno));
                (void) strv_appendf(notes, "removed partition %s", existing[i]);
        }
        if (n == 0) {
                if (access(dir, F_OK) < 0)
                        return 0;
                (void) v2_write(c, NULL, "cpuset.cpus.partition", "member", NULL);
                if (rmdir(dir) < 0)
                        return fail(ret_error, -errno, "cannot remove %s: %s", dir, strerror(errno));
                (void) strv_appendf(notes, "no partition left: %s removed", dir);
                return 0;
        }

        snprintf(path, sizeof path, "%s/cgroup.subtree_control", c->mount);
        r = write_text(path, "+cpuset");
        if (r < 0)
                return fail(ret_error, r, "cannot enable cpuset in %s: %s", path, strerror(-r));
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return fail(ret_error, -errno, "cannot create %s: %s", dir, strerror(errno));
        grown = all;
        for (size_t i = 0; existing && existing[i]; i++) {
                CpusetPartition p;

                if (!find_spec(specs, n, existing[i]))
                        continue;
                read_one(c, existing[i], &p);
                cpu_mask_or(&grown, &p.cpus);
        }
        r = v2_write(c, NULL, "cpuset.cpus", mask_str(&grown, l), ret_error);
        if (r >= 0)
                r = v2_write(c, NULL, "cpuset.cpus.partition", "root", ret_error);
        if (r >= 0)
                r = v2_write(c, NULL, "cgroup.subtree_control", "+cpuset", ret_error);
        if (r < 0)
                return r;
        /* The partitions to make, change or repair, in three passes: the kernel refuses CPUs that
         * overlap an exclusive sibling (a partition root) and a root that overlaps any sibling's
         * CPUs, so a layout whose partitions trade CPUs (rt0 1 -> 2, rt1 2 -> 3) first makes each of
         * them a member, then gives each its CPUs, then makes each a root. They are empty: one that
         * holds threads is not changed (cpusets_apply()). */
        _cleanup_free_ bool *todo = calloc(n, sizeof(bool)), *made = calloc(n, sizeof(bool));
        if (!todo || !made)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                CpusetPartition now;

                read_one(c, specs[i].name, &now);
                todo[i] = !(now.state == CPUSET_STATE_VALID && memcmp(&now.cpus, &specs[i].cpus, sizeof now.cpus) == 0);
                made[i] = now.state == CPUSET_STATE_ABSENT;
                if (todo[i] && !made[i])
                        (void) v2_write(c, specs[i].name, "cpuset.cpus.partition", "member", NULL);
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *p = path_of(c, specs[i].name, NULL);

                if (!p)
                        return -ENOMEM;
                if (!todo[i])
                        continue;
                if (made[i] && mkdir(p, 0755) < 0)
                        return fail(ret_error, -errno, "cannot create %s: %s", p, strerror(errno));
                r = v2_write(c, specs[i].name, "cgroup.type", "threaded", ret_error);
                if (r >= 0)
                        r = v2_write(c, specs[i].name, "cpuset.cpus", mask_str(&specs[i].cpus, l), ret_error);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n; i++) {
                CpusetPartition now;

                if (!todo[i])
                        continue;
                (void) mask_str(&specs[i].cpus, l);
                r = v2_write(c, specs[i].name, "cpuset.cpus.partition", "root", ret_error);
                if (r < 0)
                        return r;
                read_one(c, specs[i].name, &now);
                if (now.state != CPUSET_STATE_VALID)
                        return fail(ret_error, -EINVAL, "the kernel made partition %s (cpus %s) invalid: %s",
                                    specs[i].name, l, now.reason);
                (void) strv_appendf(notes, "%s partition %s on cpus %s", made[i] ? "created" : "changed or repaired",
                                    specs[i].name, l);
        }
        if (memcmp(&grown, &all, sizeof all) != 0)
                return v2_write(c, NULL, "cpuset.cpus", mask_str(&all, l), ret_error);
        return 0;
}

int cpusets_apply(Cpusets *c, const CpusetSpec *specs, size_t n, uint64_t per_cpu_bw, char **ret_error,
                  char ***ret_notes) {
        _cleanup_(strv_freep) char **existing = NULL, **errors = NULL, **notes = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        if (n == 0 && c->backend == CPUSET_BACKEND_NONE)
                return 0;
        r = cpusets_check(c, specs, n, &errors, &notes);
        if (r == -EINVAL) {
                if (ret_error)
                        *ret_error = strdup(errors[0]);
                return r;
        }
        if (r < 0)
                return r;
        r = list_names(c, &existing);
        if (r < 0)
                return r;

        /* Refuse, before touching anything, to remove or change a partition that holds threads. */
        for (size_t i = 0; existing && existing[i]; i++) {
                const CpusetSpec *s = find_spec(specs, n, existing[i]);
                CpusetPartition p;
                char a[CPU_LIST_MAX], b[CPU_LIST_MAX];

                read_one(c, existing[i], &p);
                if (p.n_tasks == 0)
                        continue;
                if (!s) {
                        r = fail(&error, -EBUSY, "partition %s is no longer configured but holds %u thread%s: it is "
                                 "removed once they leave", existing[i], p.n_tasks, p.n_tasks == 1 ? "" : "s");
                        goto out;
                }
                if (memcmp(&p.cpus, &s->cpus, sizeof p.cpus) != 0) {
                        r = fail(&error, -EBUSY, "partition %s holds %u thread%s: its CPUs cannot change from %s to %s "
                                 "until they leave", existing[i], p.n_tasks, p.n_tasks == 1 ? "" : "s",
                                 mask_str(&p.cpus, a), mask_str(&s->cpus, b));
                        goto out;
                }
        }
        r = check_commit(c, specs, n, existing, per_cpu_bw, &error);
        if (r < 0)
                goto out;
        fds_close(c); /* the layout changes: moves open its files again */
        r = c->backend == CPUSET_BACKEND_V1 ? v1_apply(c, specs, n, existing, &notes, &error)
                                            : v2_apply(c, specs, n, existing, &notes, &error);
out:
        remember(c);
        if (r < 0) {
                if (ret_error)
                        *ret_error = TAKE_PTR(error);
                return r;
        }
        if (ret_notes)
                *ret_notes = TAKE_PTR(notes);
        return 0;
}

/* --- moving threads edfd admitted --- */

int cpusets_move_thread(Cpusets *c, const char *name, pid_t tid) {
        _cleanup_free_ char *file = NULL;

        if (tid <= 0 || !name || !name_ok(name))
                return -EINVAL;
        if (c->backend == CPUSET_BACKEND_NONE)
                return -EOPNOTSUPP;
        /* v1 moves one thread through tasks; v2 through the threaded child's cgroup.threads. A
         * partition that does not exist: ENOENT from the open. */
        file = path_of(c, name, c->backend == CPUSET_BACKEND_V1 ? "tasks" : "cgroup.threads");
        if (!file)
                return -ENOMEM;
        return write_id(c, file, tid);
}

int cpusets_move_process(Cpusets *c, pid_t pid) {
        _cleanup_free_ char *file = NULL;

        if (pid <= 0)
                return -EINVAL;
        if (c->backend != CPUSET_BACKEND_V2)
                return -EOPNOTSUPP;
        file = path_of(c, NULL, "cgroup.procs");
        if (!file)
                return -ENOMEM;
        return write_id(c, file, pid);
}

/* v2: the cgroup of process pid (the "0::" line of /proc/PID/cgroup), below the mount. */
static int v2_cgroup_of(pid_t pid, char *buf, size_t size) {
        char path[64], text[4096];
        const char *l;
        size_t len;
        int r;

        snprintf(path, sizeof path, "/proc/%d/cgroup", (int) pid);
        r = proc_read_file(AT_FDCWD, path, PROC_READ_TRUNCATE, text, sizeof text, NULL);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        for (l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (strncmp(l, "0::", 3) == 0) {
                        l += 3;
                        len = strcspn(l, "\n");
                        if (len == 0 || len >= size)
                                return -EBADMSG;
                        memcpy(buf, l, len);
                        buf[len] = '\0';
                        return 0;
                }
        return -EBADMSG;
}

static bool v2_inside(const char *cg) {
        size_t len = strlen("/" CPUSET_DIR);

        return strncmp(cg, "/" CPUSET_DIR, len) == 0 && (cg[len] == '\0' || cg[len] == '/');
}

static CpusetOrigin *origin_find(const Cpusets *c, pid_t pid) {
        for (size_t i = 0; i < c->n_origins; i++)
                if (c->origins[i].pid == pid)
                        return &c->origins[i];
        return NULL;
}

static void origin_forget(Cpusets *c, pid_t pid) {
        CpusetOrigin *o = origin_find(c, pid);

        if (!o)
                return;
        free(o->path);
        *o = c->origins[--c->n_origins];
}

static int origin_remember(Cpusets *c, pid_t pid, const char *path) {
        CpusetOrigin *o = origin_find(c, pid), *n;
        char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        if (o) { /* a reused pid: the newest move counts */
                free(o->path);
                o->path = p;
                return 0;
        }
        n = realloc(c->origins, (c->n_origins + 1) * sizeof(*n));
        if (!n) {
                free(p);
                return -ENOMEM;
        }
        c->origins = n;
        c->origins[c->n_origins++] = (CpusetOrigin) { .pid = pid, .path = p };
        return 0;
}

int cpusets_move_in(Cpusets *c, const char *name, pid_t pid, pid_t tid) {
        _cleanup_free_ char *dir = NULL, *procs = NULL;
        char cg[PATH_MAX];
        CpuMask own = {};
        int r;

        if (pid <= 0 || tid <= 0 || !name || !name_ok(name))
                return -EINVAL;
        if (c->backend != CPUSET_BACKEND_V2)
                return cpusets_move_thread(c, name, tid);
        r = v2_cgroup_of(pid, cg, sizeof cg);
        if (r < 0)
                return r;
        if (!v2_inside(cg)) {
                _cleanup_free_ char *eff = path_of(c, NULL, "cpuset.cpus.effective");

                dir = path_of(c, name, NULL);
                if (!eff || !dir)
                        return -ENOMEM;
                if (access(dir, F_OK) < 0) /* before the process moves */
                        return -ENOENT;
                /* The process enters the threaded domain first. Where edfd-partitions has no CPU of
                 * its own (its children took them all) the kernel refuses a task there (ENOSPC), so
                 * the process goes whole into the thread's partition: its other threads share that
                 * CPU. */
                (void) read_mask(eff, &own);
                procs = cpu_mask_empty(&own) ? path_of(c, name, "cgroup.procs") : path_of(c, NULL, "cgroup.procs");
                if (!procs)
                        return -ENOMEM;
                r = origin_remember(c, pid, cg);
                if (r < 0)
                        return r;
                r = write_id(c, procs, pid);
                if (r < 0) {
                        origin_forget(c, pid);
                        return r;
                }
        }
        return cpusets_move_thread(c, name, tid);
}

const char *cpusets_origin_at(const Cpusets *c, size_t i, pid_t *ret_pid) {
        if (!c || i >= c->n_origins)
                return NULL;
        *ret_pid = c->origins[i].pid;
        return c->origins[i].path;
}

const char *cpusets_origin_of(const Cpusets *c, pid_t pid) {
        const CpusetOrigin *o = c ? origin_find(c, pid) : NULL;

        return o ? o->path : NULL;
}

int cpusets_origin_restore(Cpusets *c, pid_t pid, const char *path) {
        if (pid <= 0 || !path || path[0] != '/')
                return -EINVAL;
        if (origin_find(c, pid))
                return 0;
        return origin_remember(c, pid, path);
}

int cpusets_orphans(Cpusets *c, CpusetOrphan **ret, size_t *ret_n) {
        CpusetOrphan *o = NULL;
        size_t n = 0;

        *ret = NULL;
        *ret_n = 0;
        for (size_t i = 0; i < c->n_origins;) {
                char path[PATH_MAX], cg[PATH_MAX];
                CpusetOrigin *x = &c->origins[i];

                /* Gone, or no longer ours (a reused pid outside edfd-partitions): forget it. */
                if (v2_cgroup_of(x->pid, cg, sizeof cg) < 0 || !v2_inside(cg)) {
                        origin_forget(c, x->pid);
                        continue;
                }
                snprintf(path, sizeof path, "%s%s", c->mount, x->path);
                if (strcmp(x->path, "/") != 0 && access(path, F_OK) < 0 && errno == ENOENT) {
                        CpusetOrphan *t = realloc(o, (n + 1) * sizeof(*t));

                        if (!t) {
                                free(o);
                                return -ENOMEM;
                        }
                        o = t;
                        o[n] = (CpusetOrphan) { .pid = x->pid };
                        snprintf(o[n].origin, sizeof o[n].origin, "%s", x->path);
                        n++;
                }
                i++;
        }
        *ret = o;
        *ret_n = n;
        return 0;
}

bool cpusets_move_back_candidate(const char *origin, size_t i, char *buf, size_t size) {
        size_t len, depth = 0;

        if (!origin || origin[0] != '/' || !buf)
                return false;
        len = strlen(origin);
        if (len == 1) { /* from the root: back to the root */
                if (i > 0 || size < 2)
                        return false;
                memcpy(buf, "/", 2);
                return true;
        }
        /* Every component a name: not empty (no "//", no trailing "/"), not "." or "..". */
        for (const char *p = origin + 1;;) {
                size_t n = strcspn(p, "/");

                if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                depth++;
                if (p[n] == '\0')
                        break;
                p += n + 1;
        }
        if (i >= depth || len >= size)
                return false;
        memcpy(buf, origin, len + 1);
        for (size_t k = 0; k < i; k++) /* up one component per step: the root is never reached */
                *strrchr(buf, '/') = '\0';
        return true;
}

int cpusets_move_out_to(Cpusets *c, pid_t tid, char *where, size_t size) {
        char path[PATH_MAX], buf[32], cand[PATH_MAX];
        CpusetOrigin *o;
        int r = -ENOENT;

        if (tid <= 0)
                return -EINVAL;
        if (where && size > 0)
                where[0] = '\0';
        switch (c->backend) {
        case CPUSET_BACKEND_V1:
                snprintf(path, sizeof path, "%s/tasks", c->mount);
                return write_id(c, path, tid);
        case CPUSET_BACKEND_V2:
                snprintf(buf, sizeof buf, "%d", (int) tid);
                o = origin_find(c, tid);
                if (!o)
                        return -ENOENT; /* stays: edfd does not know where it belongs */
                for (size_t i = 0; cpusets_move_back_candidate(o->path, i, cand, sizeof cand); i++) {
                        if (where && size > 0)
                                snprintf(where, size, "%s", cand);
                        /* A cgroup that is gone (its service stopped) or refuses it (a controller
                         * enabled in its subtree_control: no process may sit in it then) is passed
                         * for its parent. */
                        if (snprintf(path, sizeof path, "%s%s/cgroup.procs", c->mount,
                                     strcmp(cand, "/") == 0 ? "" : cand) >= (int) sizeof path) {
                                r = -ENAMETOOLONG;
                                continue;
                        }
                        r = write_text(path, buf);
                        if (r == 0 || r == -ESRCH) {
                                origin_forget(c, tid);
                                return r;
                        }
                }
                if (where && size > 0)
                        snprintf(where, size, "%s", o->path);
                return r; /* stays, its origin kept for a later release */
        default:
                return -EOPNOTSUPP;
        }
}

int cpusets_move_out(Cpusets *c, pid_t tid) {
        return cpusets_move_out_to(c, tid, NULL, 0);
}

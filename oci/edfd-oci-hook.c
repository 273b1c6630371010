/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* edfd-oci-hook: admits a container's reservation with edfd, from an OCI hook (edfd-oci-hook(8)).
 *
 *   edfd-oci-hook [--config FILE] createRuntime   < OCI state
 *   edfd-oci-hook [--config FILE] poststop        < OCI state
 *
 * createRuntime: the container's process exists (runc init, parked until the engine starts the
 * container) and has not run the container's program yet. The hook reads the org.edfd.*
 * annotations, checks them against its configuration (which groups containers may use, and how
 * much one container may ask there) and the bundle's config.json (no SCHED_DEADLINE of its own),
 * makes the group GROUP/ID for this container with exactly the container's bandwidth, and admits
 * the process's main thread into it: by default when the container's program first sleeps after
 * runc's exec (edfd watches for that: AdmitAtStart), with org.edfd.startup=0s at once. Any failure removes what it made and exits 1 with the reason
 * on standard error, which fails the container's creation: the engine shows the reason.
 *
 * poststop: the container's processes are gone; whatever edfd still holds in GROUP/ID (edfd gives
 * bandwidth back when a thread exits, so normally nothing) is released and the group removed.
 * Twice, or for a container the hook never admitted, is harmless.
 *
 * The group per container is the label: its name is the container's id, it holds the container's
 * main reservation and what its forks are given under the group's fork policy, and its size caps
 * the container at what it asked. */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <edfd/edfd.h>

#include "config.h"
#include "basic/escape.h"
#include "core/bandwidth.h"
#include "core/duration.h"
#include "oci-hook.h"

#define DEFAULT_CONFIG EDFD_OCI_HOOK_CONFIG_PATH

static const char *prog = "edfd-oci-hook";
static const char *container = NULL; /* for messages: the id, shortened */
static char container_short[16];

static void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void err(const char *fmt, ...) {
        char *msg = NULL, *shown, *id;
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vasprintf(&msg, fmt, ap);
        va_end(ap);
        /* A message quotes what the container's creator wrote (its id, annotations, the bundle's
         * path and config.json) and edfd's answers: escaped for the terminal or log that shows it
         * (basic/escape.h), as a whole. */
        shown = n >= 0 ? escape_terminal_dup(msg) : NULL;
        id = container ? escape_terminal_dup(container) : NULL;
        fprintf(stderr, "%s: ", prog);
        if (container)
                fprintf(stderr, "container %s: ", id ?: "?");
        fprintf(stderr, "%s\n", shown ?: "out of memory");
        free(id);
        free(shown);
        free(msg);
}

/* How long the hook waits for its input, in all: an engine writes the OCI state at once and closes
 * it, so a standard input that stays open and silent is a stuck engine, never a slow one. */
#define HOOK_READ_TIMEOUT_MS 10000

static uint64_t now_ms(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* Read all of fd, at most max bytes (more is -EFBIG), within HOOK_READ_TIMEOUT_MS (-ETIMEDOUT: a
 * writer that neither writes nor closes). Returns the length or negative errno. */
static ssize_t read_all(int fd, size_t max, char **ret) {
        size_t len = 0, size = 4096;
        uint64_t deadline = now_ms() + HOOK_READ_TIMEOUT_MS;
        char *buf = malloc(size + 1);

        if (!buf)
                return -ENOMEM;
        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                uint64_t now = now_ms();
                ssize_t n;
                int e;

                if (len == size) {
                        char *nb;
                        if (size > max) {
                                free(buf);
                                return -EFBIG;
                        }
                        size *= 2;
                        nb = realloc(buf, size + 1);
                        if (!nb) {
                                free(buf);
                                return -ENOMEM;
                        }
                        buf = nb;
                }
                /* poll(2) says a regular file is always readable: only pipes and the like wait here. */
                e = now >= deadline ? 0 : poll(&p, 1, (int) (deadline - now));
                if (e < 0 && errno == EINTR)
                        continue;
                if (e <= 0) {
                        e = e < 0 ? -errno : -ETIMEDOUT;
                        free(buf);
                        return e;
                }
                n = read(fd, buf + len, size - len);
                if (n < 0) {
                        if (errno == EINTR || errno == EAGAIN)
                                continue;
                        e = -errno;
                        free(buf);
                        return e;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        if (len > max) {
                free(buf);
                return -EFBIG;
        }
        buf[len] = '\0';
        *ret = buf;
        return (ssize_t) len;
}

/* A file the hook reads (its configuration, the bundle's config.json): a regular file only (-EBADFD:
 * a FIFO, a device or a directory, which could block the hook or never end), at most max bytes
 * (-EFBIG). Opened without blocking, so that a FIFO cannot hold the open(2) itself. */
static ssize_t read_file(const char *path, size_t max, char **ret) {
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;
        ssize_t n;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                n = -errno;
        else if (!S_ISREG(st.st_mode))
                n = -EBADFD;
        else if ((uint64_t) st.st_size > max)
                n = -EFBIG;
        else
                n = read_all(fd, max, ret);
        close(fd);
        return n;
}

/* Why a read failed, for a message: the limits by name, else the errno's text. */
static const char *read_error(ssize_t n) {
        switch (n) {
        case -EFBIG:
                return "larger than 1 MiB";
        case -EBADFD:
                return "not a regular file (a FIFO, a device or a directory is never read)";
        case -ETIMEDOUT:
                return "nothing came within 10 s (the writer neither wrote nor closed it)";
        default:
                return strerror((int) -n);
        }
}

static int load_config(const char *path, HookConfig *ret) {
        char *text = NULL, *why = NULL;
        ssize_t n = read_file(path, OCI_STATE_MAX, &text);
        int r;

        if (n < 0) {
                err("cannot read the hook's configuration %s: %s (it says which edfd groups containers may "
                    "use: edfd-oci-hook(8))", path, read_error(n));
                return -1;
        }
        r = hook_config_parse(text, (size_t) n, ret, &why);
        free(text);
        if (r < 0) {
                err("%s: %s", path, why ? why : strerror(-r));
                free(why);
                return -1;
        }
        return 0;
}

static void set_container(const char *id) {
        snprintf(container_short, sizeof(container_short), "%.12s", id);
        container = container_short;
}

/* Release what edfd holds in the container's group, then remove the group. -ENOENT (no such
 * group) is success: the second poststop, or a container that never got one. */
static int clean_group(edfd *e, const char *path) {
        edfd_snapshot *s = NULL;
        int r;

        r = edfd_snapshot_fetch(e, EDFD_SNAPSHOT_RESERVATIONS, &s);
        if (r < 0) {
                err("cannot list edfd's reservations: %s", edfd_error_message(e));
                return r;
        }
        for (size_t i = 0; i < edfd_snapshot_n_reservations(s); i++) {
                const edfd_reservation *v = edfd_snapshot_reservation(s, i);

                if (strcmp(edfd_reservation_group(v), path) != 0)
                        continue;
                r = edfd_release(e, edfd_reservation_id(v));
                if (r < 0 && r != -ENXIO) {
                        err("cannot release reservation %llu of %s: %s",
                            (unsigned long long) edfd_reservation_id(v), path, edfd_error_message(e));
                        edfd_snapshot_free(s);
                        return r;
                }
        }
        edfd_snapshot_free(s);
        r = edfd_group_remove(e, path);
        if (r < 0 && r != -ENOENT) {
                err("cannot remove group %s: %s", path, edfd_error_message(e));
                return r;
        }
        return 0;
}

/* A container's group's users: list: empty, root only (see stage_create). */
static const char *const container_users[] = { NULL };

/* What poststop may remove: GROUP/ID as createRuntime makes it, a group made at run time, not one of
 * edfd's configuration. (Not also "open to root only": an edfd before journal version 3 kept no users
 * list, and a container's group that its restart opened again must still go at poststop.) Returns 1 when
 * it is one, 0 when there is no such group, -1 (said) when a group of that name is one of the
 * configuration's: nothing is touched then. */
static int made_by_create(edfd *e, const char *path) {
        edfd_snapshot *s = NULL;
        int r;

        r = edfd_snapshot_fetch(e, EDFD_SNAPSHOT_GROUPS, &s);
        if (r < 0) {
                err("cannot list edfd's groups: %s", edfd_error_message(e));
                return -1;
        }
        r = 0;
        for (size_t i = 0; i < edfd_snapshot_n_groups(s); i++) {
                const edfd_group *g = edfd_snapshot_group(s, i);

                if (strcmp(edfd_group_path(g), path) != 0)
                        continue;
                if (!edfd_group_dynamic(g)) {
                        err("group %s is not the one createRuntime makes for this container (it comes from edfd's "
                            "configuration): not removed", path);
                        r = -1;
                } else
                        r = 1;
                break;
        }
        edfd_snapshot_free(s);
        return r;
}

static int open_edfd(edfd **ret) {
        int r = edfd_open(ret);

        if (r < 0)
                err("cannot reach edfd on the system bus: %s", strerror(-r));
        return r;
}

/* Say why (the parser's message, or the errno's) and forget the message. */
static void report(int r, char **why) {
        err("%s", *why ? *why : strerror(-r));
        free(*why);
        *why = NULL;
}

/* The state: its id first, so that every later message names the container, then the request
 * (with its parameters when want_params). Returns 0 or -1 (said). */
static int read_state(const char *state, size_t len, bool want_params, OciRequest *q) {
        char *why = NULL;
        int r = oci_state_parse(state, len, false, q, &why);

        if (r < 0) {
                report(r, &why);
                return -1;
        }
        set_container(q->id);
        if (!want_params)
                return 0;
        oci_request_done(q);
        r = oci_state_parse(state, len, true, q, &why);
        if (r < 0) {
                report(r, &why);
                return -1;
        }
        return 0;
}

/* A rootless engine runs its hooks as its user: no group of the container's own then (see
 * stage_create). Its runtime runs them inside the engine's user namespace, where the user is
 * mapped to root: what counts is the uid edfd sees, the effective uid mapped out to the initial
 * namespace through /proc/self/uid_map. */
static bool rootless;

/* Whether euid is root outside every user namespace: true only when uid_map maps euid to 0. An
 * unreadable map is taken as not root (edfd then decides on the uid it sees). */
static bool outside_root(uid_t euid) {
        FILE *f = fopen("/proc/self/uid_map", "re");
        unsigned long inside, outside, count;
        bool root = false;

        if (!f)
                return false;
        while (fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3)
                if (euid >= inside && euid - inside < count) {
                        root = outside + (euid - inside) == 0;
                        break;
                }
        fclose(f);
        return root;
}

static int stage_create(const char *config_path, const char *state, size_t len) {
        OciRequest q = {};
        HookConfig c = {};
        edfd *e = NULL;
        edfd_request *rq = NULL;
        char *why = NULL, *spec = NULL, *spec_path = NULL, *path = NULL;
        const char *group;
        uint64_t id;
        int r, ret = 1;

        if (read_state(state, len, true, &q) < 0)
                goto out;
        if (q.sandbox || !q.wanted) {
                ret = 0; /* nothing asked (or a pod's sandbox, which carries the pod's annotations) */
                goto out;
        }
        if (load_config(config_path, &c) < 0)
                goto out;
        r = hook_authorize(&c, &q, &group, &why);
        if (r < 0) {
                report(r, &why);
                goto out;
        }
        if (!q.bundle) {
                err("the OCI state has no \"bundle\": the spec cannot be checked");
                goto out;
        }
        if (asprintf(&spec_path, "%s/config.json", q.bundle) < 0)
                goto out;
        ssize_t n = read_file(spec_path, OCI_STATE_MAX, &spec);
        if (n < 0) {
                err("cannot read %s: %s", spec_path, read_error(n));
                goto out;
        }
        r = oci_spec_check(spec, (size_t) n, &why);
        if (r < 0) {
                report(r, &why);
                goto out;
        }
        if (rootless) {
                /* No group of its own: making groups is root's (or polkit's manage action). The
                 * reservation goes into the group itself, held to edfd's rules for this user (the
                 * group's users, the user's limits), and is released by edfd when it exits. edfd
                 * holds its bandwidth in the group from this call on (AdmitAtStart), so a container
                 * created beside it that does not fit is refused here, at its creation. */
                path = strdup(group);
                if (!path) {
                        err("out of memory");
                        goto out;
                }
        } else {
                r = hook_container_group(group, q.id, &path, &why);
                if (r < 0) {
                        report(r, &why);
                        goto out;
                }
        }

        if (open_edfd(&e) < 0)
                goto out;
        if (!rootless) {
                /* Open to root only, not to its parent's users: (anyone, as docs/containers.md
                 * configures containers): the name is public, and whoever got in before the
                 * container's program starts would take its booked bandwidth. The hook, as root,
                 * admits the container's process; nobody else may. */
                r = edfd_group_create_with_users(e, path, q.runtime, q.period, container_users);
                if (r == -EEXIST) {
                        /* Left by a container of the same id whose poststop never ran (a crash): clean it. */
                        if (clean_group(e, path) < 0)
                                goto out;
                        r = edfd_group_create_with_users(e, path, q.runtime, q.period, container_users);
                }
                if (r < 0) {
                        err("edfd refused: %s", edfd_error_message(e));
                        goto out;
                }
        }
        if (edfd_request_new(&rq) < 0 || edfd_request_set_thread(rq, q.pid, q.pid) < 0 ||
            edfd_request_set_group(rq, path) < 0 || edfd_request_set_runtime(rq, q.runtime) < 0 ||
            edfd_request_set_deadline(rq, q.deadline) < 0 || edfd_request_set_period(rq, q.period) < 0) {
                err("out of memory");
                if (!rootless)
                        (void) edfd_group_remove(e, path);
                goto out;
        }
        if (q.startup > 0)
                /* The bandwidth is booked by the group; edfd admits the process when its program
                 * first sleeps after runc's exec (or the bound has passed): runc init's remaining
                 * start-up, the exec, the loader and the program's initialization run unreserved. */
                r = edfd_admit_at_start(e, rq, q.startup);
        else
                r = edfd_admit(e, rq, &id);
        if (r < 0) {
                err("edfd refused: %s", edfd_error_message(e));
                if (!rootless)
                        (void) edfd_group_remove(e, path);
                goto out;
        }
        ret = 0;
out:
        edfd_request_free(rq);
        edfd_close(e);
        free(path);
        free(spec);
        free(spec_path);
        free(why);
        hook_config_done(&c);
        oci_request_done(&q);
        return ret;
}

static int stage_poststop(const char *config_path, const char *state, size_t len) {
        OciRequest q = {};
        HookConfig c = {};
        edfd *e = NULL;
        char *why = NULL, *path = NULL;
        const char *group;
        int r, ret = 1;

        if (read_state(state, len, false, &q) < 0)
                goto out;
        if (q.sandbox || !q.wanted || rootless) {
                ret = 0; /* rootless: no group of its own, and edfd released the threads as they exited */
                goto out;
        }
        /* The annotations are whoever created the container's: what poststop removes is derived from
         * them only as createRuntime would have, a group the configuration opens to containers and
         * the container's own id below it, and only when edfd shows the group createRuntime makes
         * (made_by_create). An annotation that names anything else removes nothing. */
        if (load_config(config_path, &c) < 0)
                goto out;
        group = q.group ? q.group : c.default_group;
        if (!group) {
                ret = 0; /* creation was refused for want of a group: nothing was made */
                goto out;
        }
        if (!hook_config_group(&c, group)) {
                err("group %s is not open to containers (the hook's configuration): createRuntime made nothing "
                    "there, nothing is removed", group);
                goto out;
        }
        r = hook_container_group(group, q.id, &path, &why);
        if (r < 0) {
                ret = 0; /* such an id was refused at creation: nothing was made */
                goto out;
        }
        if (open_edfd(&e) < 0)
                goto out;
        r = made_by_create(e, path);
        if (r < 0)
                goto out;
        if (r > 0 && clean_group(e, path) < 0)
                goto out;
        ret = 0;
out:
        edfd_close(e);
        free(path);
        free(why);
        hook_config_done(&c);
        oci_request_done(&q);
        return ret;
}

static void usage(FILE *f) {
        fprintf(f,
                "Usage: %s [--config FILE] STAGE < OCI-STATE\n"
                "       %s [--config FILE] --groups\n"
                "\n"
                "Admit a container's reservation with edfd from an OCI hook (oci-hooks(5)).\n"
                "\n"
                "Stages:\n"
                "  createRuntime   admit the container's process from its org.edfd.* annotations;\n"
                "                  a refusal fails the container's creation with edfd's reason\n"
                "  poststop        release what is left of the container's reservation\n"
                "\n"
                "Options:\n"
                "  -c, --config FILE   the hook's configuration (default %s)\n"
                "      --groups        list the groups open to containers (GROUP, the most one\n"
                "                      container may ask, \"default\") and exit\n"
                "  -h, --help          show this help\n"
                "      --version       show the version\n",
                prog, prog, DEFAULT_CONFIG);
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "config", required_argument, NULL, 'c' },
                { "groups", no_argument, NULL, 'G' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        const char *config_path = DEFAULT_CONFIG;
        bool list_groups = false;
        char *state = NULL;
        ssize_t n;
        int o, r;

        while ((o = getopt_long(argc, argv, "+c:h", opts, NULL)) >= 0)
                switch (o) {
                case 'c':
                        config_path = optarg;
                        break;
                case 'G':
                        list_groups = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        printf("%s %s\n", prog, EDFD_VERSION);
                        return 0;
                default:
                        fprintf(stderr, "Try '%s --help'.\n", prog);
                        return 2;
                }
        if (list_groups) {
                HookConfig c = {};
                char most[DURATION_MAX];

                if (optind != argc) {
                        fprintf(stderr, "%s: --groups takes no stage\nTry '%s --help'.\n", prog, prog);
                        return 2;
                }
                if (load_config(config_path, &c) < 0)
                        return 1;
                for (size_t i = 0; i < c.n_groups; i++)
                        printf("%s\t%s%s\n", c.groups[i].name, bw_format(c.groups[i].max_bw, most),
                               c.default_group && strcmp(c.default_group, c.groups[i].name) == 0 ? "\tdefault" : "");
                hook_config_done(&c);
                return 0;
        }
        if (optind + 1 != argc) {
                fprintf(stderr, "%s: %s (createRuntime or poststop)\nTry '%s --help'.\n", prog,
                        optind == argc ? "which stage? give one" : "one stage only", prog);
                return 2;
        }
        const char *stage = argv[optind];
        if (strcmp(stage, "createRuntime") != 0 && strcmp(stage, "poststop") != 0) {
                char *shown = escape_terminal_dup(stage);
                fprintf(stderr, "%s: unknown stage \"%s\" (createRuntime or poststop)\n", prog, shown ?: "?");
                free(shown);
                return 2;
        }
        rootless = !outside_root(geteuid());
        n = read_all(STDIN_FILENO, OCI_STATE_MAX, &state);
        if (n < 0) {
                err("cannot read the OCI state on standard input: %s",
                    read_error(n));
                return 1;
        }
        if (strcmp(stage, "createRuntime") == 0)
                r = stage_create(config_path, state, (size_t) n);
        else
                r = stage_poststop(config_path, state, (size_t) n);
        free(state);
        return r;
}

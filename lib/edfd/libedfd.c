/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libedfd: the connection, the meaning of errors, and the calls that change something.
 *
 * Every failure leaves its reason in the handle: the D-Bus error name and the message as edfd sent
 * them, or the library's own text for a local failure. The errno of an edfd error comes from the
 * table below (the library's own, not sd-bus's process-wide error map, which an application may
 * use for itself); bus errors map to the errno that says what the caller can do about them:
 * edfd is not there (-EHOSTUNREACH), did not answer (-ETIMEDOUT), the connection broke
 * (-ECONNRESET), the bus policy refused (-EACCES), edfd does not know the call (-EOPNOTSUPP). */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "edfd/libedfd-internal.h"
#include "shared/protocol.h"

/* The public header and the bus contract name the same bits (a redefinition that differs is an
 * error of the compiler). */
_Static_assert(EDFD_BW_UNIT == (UINT64_C(1) << 20), "the bandwidth unit is the kernel's");

struct edfd_request {
        uint64_t runtime, deadline, period, flags;
        char *group;               /* NULL: the default group ("" on the bus) */
        pid_t pid, tid;            /* pid 0: the calling thread */
};

struct edfd_split {
        uint64_t id[2], runtime[2];
        uint32_t cpu[2];
};

static const struct {
        const char *name;
        int errnum;
} error_names[] = {
        { EDFD_ERROR_OVER_BUDGET, ENOSPC },
        { EDFD_ERROR_INVALID_PARAMETERS, EINVAL },
        { EDFD_ERROR_NO_SUCH_GROUP, ENOENT },
        { EDFD_ERROR_GROUP_EXISTS, EEXIST },
        { EDFD_ERROR_NO_SUCH_RESERVATION, ENXIO },
        { EDFD_ERROR_NO_SUCH_THREAD, ESRCH },
        { EDFD_ERROR_ALREADY_ADMITTED, EALREADY },
        { EDFD_ERROR_FOREIGN_DEADLINE, EBUSY },
        { EDFD_ERROR_GROUP_NOT_EMPTY, ENOTEMPTY },
        { EDFD_ERROR_KERNEL_REFUSED, EREMOTEIO },
        { EDFD_ERROR_PERMISSION_DENIED, EACCES },
        { EDFD_ERROR_LIMIT_EXCEEDED, EDQUOT },
        { EDFD_ERROR_INVALID_CONFIG, EBADMSG },
        { SD_BUS_ERROR_SERVICE_UNKNOWN, EHOSTUNREACH },
        { SD_BUS_ERROR_NAME_HAS_NO_OWNER, EHOSTUNREACH },
        { SD_BUS_ERROR_NO_REPLY, ETIMEDOUT },
        { SD_BUS_ERROR_TIMEOUT, ETIMEDOUT },
        { SD_BUS_ERROR_DISCONNECTED, ECONNRESET },
        { SD_BUS_ERROR_ACCESS_DENIED, EACCES },
        { SD_BUS_ERROR_UNKNOWN_METHOD, EOPNOTSUPP },
        { SD_BUS_ERROR_UNKNOWN_OBJECT, EOPNOTSUPP },
        { SD_BUS_ERROR_UNKNOWN_INTERFACE, EOPNOTSUPP },
        { SD_BUS_ERROR_UNKNOWN_PROPERTY, EOPNOTSUPP },
        { SD_BUS_ERROR_INVALID_ARGS, EINVAL },
        { SD_BUS_ERROR_NO_MEMORY, ENOMEM },
        { SD_BUS_ERROR_LIMITS_EXCEEDED, ENOBUFS },
};

static const char *bus_address(void) {
        const char *a = getenv("DBUS_SYSTEM_BUS_ADDRESS");
        return a && *a ? a : "unix:path=/run/dbus/system_bus_socket";
}

static void error_set(edfd *e, const char *name, char *message) {
        free(e->error_name);
        free(e->error_message);
        e->error_name = name ? strdup(name) : NULL;
        e->error_message = message; /* NULL when out of memory: edfd_error_message() says so */
}

/* Which process and thread we are, without a system call per library call (glibc caches neither
 * getpid() nor gettid(): two syscalls per call cost 4% of an admit+release pair on a VM). A fork
 * child's handler bumps the generation and forgets the forking thread's id; the process id is read
 * again after it. The handler is registered once, at the first edfd_open(). */
static unsigned fork_generation;
static pid_t cached_pid;
static __thread pid_t cached_tid;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void after_fork_in_child(void) {
        __atomic_add_fetch(&fork_generation, 1, __ATOMIC_SEQ_CST);
        __atomic_store_n(&cached_pid, 0, __ATOMIC_SEQ_CST);
        cached_tid = 0;
}

static void register_atfork(void) {
        (void) pthread_atfork(NULL, NULL, after_fork_in_child);
}

pid_t edfd_self_pid(void) {
        pid_t pid = __atomic_load_n(&cached_pid, __ATOMIC_SEQ_CST);

        if (pid == 0) {
                pid = getpid();
                __atomic_store_n(&cached_pid, pid, __ATOMIC_SEQ_CST);
        }
        return pid;
}

pid_t edfd_self_tid(void) {
        if (cached_tid == 0)
                cached_tid = gettid();
        return cached_tid;
}

int edfd_begin(edfd *e) {
        if (!e)
                return -EINVAL;
        if (__atomic_load_n(&fork_generation, __ATOMIC_SEQ_CST) != e->generation) {
                char *m = NULL;
                if (asprintf(&m, "this handle belongs to process %d; open another after fork()", (int) e->pid) < 0)
                        m = NULL;
                error_set(e, NULL, m);
                return -ECHILD;
        }
        if (e->error_name || !e->error_message || *e->error_message)
                error_set(e, NULL, strdup(""));
        return 0;
}

int edfd_fail(edfd *e, int r, const char *fmt, ...) {
        char *m = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        va_end(ap);
        error_set(e, NULL, m);
        return r;
}

static bool has_prefix(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int errno_of_name(const sd_bus_error *error) {
        int r;

        for (size_t i = 0; i < sizeof error_names / sizeof error_names[0]; i++)
                if (strcmp(error->name, error_names[i].name) == 0)
                        return error_names[i].errnum;
        if (has_prefix(error->name, "org.freedesktop.DBus.Error.Spawn."))
                return EHOSTUNREACH;
        if (has_prefix(error->name, EDFD_ERROR_PREFIX))
                return EPROTO; /* an error of a newer edfd: its name and message say what */
        r = sd_bus_error_get_errno(error);
        return r > 0 ? r : EIO;
}

int edfd_fail_bus(edfd *e, const sd_bus_error *error, int r, const char *what) {
        if (error && sd_bus_error_is_set(error)) {
                int errnum = errno_of_name(error);
                char *m = strdup(error->message && *error->message ? error->message : error->name);
                error_set(e, error->name, m);
                return -errnum;
        }
        if (r >= 0)
                r = -EIO;
        if (r == -ECONNREFUSED || r == -ENOENT || r == -ENOTCONN || r == -ECONNRESET || r == -EPIPE ||
            r == -ESHUTDOWN)
                return edfd_fail(e, r, "cannot reach edfd on the system bus at %s: %s", bus_address(), strerror(-r));
        if (r == -ETIMEDOUT)
                return edfd_fail(e, r, "edfd did not answer %s in time", what);
        return edfd_fail(e, r, "%s failed: %s", what, strerror(-r));
}

int edfd_fail_reply(edfd *e, sd_bus_message *reply, const char *what) {
        return edfd_fail_bus(e, sd_bus_message_get_error(reply), -EIO, what);
}

int edfd_fail_parse(edfd *e, int r, const char *what) {
        return edfd_fail(e, r < 0 ? r : -EBADMSG, "cannot parse edfd's reply to %s: %s", what, strerror(r < 0 ? -r : EBADMSG));
}

const char *edfd_error_name(const edfd *e) {
        return e ? e->error_name : NULL;
}

const char *edfd_error_message(const edfd *e) {
        if (!e)
                return "no handle (NULL)";
        return e->error_message ?: "out of memory for the error message";
}

int edfd_open(edfd **ret) {
        edfd *e;
        int r;

        if (!ret)
                return -EINVAL;
        e = calloc(1, sizeof *e);
        if (!e)
                return -ENOMEM;
        (void) pthread_once(&atfork_once, register_atfork);
        e->generation = __atomic_load_n(&fork_generation, __ATOMIC_SEQ_CST);
        e->pid = edfd_self_pid();
        r = sd_bus_open_system(&e->bus);
        if (r < 0) {
                free(e);
                return r;
        }
        *ret = e;
        return 0;
}

edfd *edfd_close(edfd *e) {
        if (!e)
                return NULL;
        e->match_signals = sd_bus_slot_unref(e->match_signals);
        e->match_owner = sd_bus_slot_unref(e->match_owner);
        e->match_disconnected = sd_bus_slot_unref(e->match_disconnected);
        /* In a child after fork() sd-bus neither flushes nor closes the parent's connection; it only
         * frees this copy. */
        sd_bus_flush_close_unref(e->bus);
        free(e->error_name);
        free(e->error_message);
        free(e);
        return NULL;
}

/* --- calls --- */

/* The reply of an asynchronous call, for an awake call. */
typedef struct AwakeCall {
        bool done;
        sd_bus_message *reply;
} AwakeCall;

static int on_awake_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        AwakeCall *c = userdata;

        c->done = true;
        c->reply = sd_bus_message_ref(m);
        return 1;
}

static uint64_t mono_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

/* Send call and wait for its reply without ever sleeping: process what has arrived, else look again
 * at once (sched_yield() only). A thread that edfd moves into a partition on another CPU must stay
 * runnable: the kernel moves a sleeping thread only when it wakes, and edfd could not admit it on
 * its new CPU before that. */
static int call_awake(edfd *e, sd_bus_message *call, const char *what, sd_bus_message **ret_reply) {
        sd_bus_slot *slot = NULL;
        AwakeCall c = {};
        uint64_t timeout_usec = 0, start;
        int r;

        r = sd_bus_call_async(e->bus, &slot, call, on_awake_reply, &c, 0);
        if (r < 0)
                return edfd_fail_bus(e, NULL, r, what);
        (void) sd_bus_get_method_call_timeout(e->bus, &timeout_usec);
        start = mono_usec();
        while (!c.done) {
                r = sd_bus_process(e->bus, NULL);
                if (r < 0)
                        break;
                if (r > 0)
                        continue;
                if (mono_usec() - start > timeout_usec) {
                        r = -ETIMEDOUT;
                        break;
                }
                sched_yield();
        }
        sd_bus_slot_unref(slot);
        if (!c.done)
                return edfd_fail_bus(e, NULL, r, what);
        if (sd_bus_message_is_method_error(c.reply, NULL)) {
                r = edfd_fail_reply(e, c.reply, what);
                sd_bus_message_unref(c.reply);
                return r;
        }
        *ret_reply = c.reply;
        return 0;
}

int edfd_call_new(edfd *e, const char *method, sd_bus_message **ret) {
        int r = sd_bus_message_new_method_call(e->bus, ret, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, method);

        return r < 0 ? edfd_fail_bus(e, NULL, r, method) : 0;
}

int edfd_call_send(edfd *e, sd_bus_message *call, const char *method, bool awake, sd_bus_message **ret_reply) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        int r;

        if (awake)
                r = call_awake(e, call, method, &reply);
        else {
                r = sd_bus_call(e->bus, call, 0, &error, &reply);
                if (r < 0)
                        r = edfd_fail_bus(e, &error, r, method);
        }
        sd_bus_error_free(&error);
        if (r < 0)
                return r;
        if (ret_reply)
                *ret_reply = reply;
        else
                sd_bus_message_unref(reply);
        return 0;
}

int edfd_call(edfd *e, const char *method, bool awake, sd_bus_message **ret_reply, const char *types, ...) {
        sd_bus_message *call = NULL;
        va_list ap;
        int r;

        r = edfd_call_new(e, method, &call);
        if (r < 0)
                return r;
        if (types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(call, types, ap);
                va_end(ap);
                if (r < 0) {
                        sd_bus_message_unref(call);
                        if (r == -EINVAL)
                                return edfd_fail(e, r, "cannot make the %s call: a string is not valid UTF-8", method);
                        return edfd_fail(e, r, "cannot make the %s call: %s", method, strerror(-r));
                }
        }
        r = edfd_call_send(e, call, method, awake, ret_reply);
        sd_bus_message_unref(call);
        return r;
}

/* --- requests --- */

int edfd_request_new(edfd_request **ret) {
        edfd_request *q;

        if (!ret)
                return -EINVAL;
        q = calloc(1, sizeof *q);
        if (!q)
                return -ENOMEM;
        *ret = q;
        return 0;
}

edfd_request *edfd_request_free(edfd_request *q) {
        if (q) {
                free(q->group);
                free(q);
        }
        return NULL;
}

int edfd_request_set_runtime(edfd_request *q, uint64_t runtime) {
        if (!q || runtime == 0)
                return -EINVAL;
        q->runtime = runtime;
        return 0;
}

int edfd_request_set_deadline(edfd_request *q, uint64_t deadline) {
        if (!q)
                return -EINVAL;
        q->deadline = deadline;
        return 0;
}

int edfd_request_set_period(edfd_request *q, uint64_t period) {
        if (!q || period == 0)
                return -EINVAL;
        q->period = period;
        return 0;
}

int edfd_request_set_group(edfd_request *q, const char *group) {
        char *g = NULL;

        if (!q)
                return -EINVAL;
        if (group && *group) {
                g = strdup(group);
                if (!g)
                        return -ENOMEM;
        }
        free(q->group);
        q->group = g;
        return 0;
}

int edfd_request_set_flags(edfd_request *q, uint64_t flags) {
        if (!q)
                return -EINVAL;
        q->flags = flags;
        return 0;
}

int edfd_request_set_thread(edfd_request *q, pid_t pid, pid_t tid) {
        if (!q || pid < 0 || tid < 0 || (pid == 0 && tid != 0))
                return -EINVAL;
        q->pid = pid;
        q->tid = pid == 0 ? 0 : tid ?: pid;
        return 0;
}

/* The request's thread on the bus, and whether it is the calling thread. */
/* The start of every call that takes a request: the handle, the request, its times, whom it is for. */
static int request_begin(edfd *e, const edfd_request *q, const char *what, uint32_t *ret_pid, uint32_t *ret_tid,
                         bool *ret_self) {
        pid_t pid, tid;
        int r;

        r = edfd_begin(e);
        if (r < 0)
                return r;
        if (!q)
                return edfd_fail(e, -EINVAL, "%s: no request (NULL)", what);
        pid = q->pid ?: edfd_self_pid();
        tid = q->pid ? q->tid : edfd_self_tid();
        if (q->runtime == 0)
                return edfd_fail(e, -EINVAL, "%s: the request has no runtime (edfd_request_set_runtime())", what);
        if (q->period == 0)
                return edfd_fail(e, -EINVAL, "%s: the request has no period (edfd_request_set_period())", what);
        *ret_pid = (uint32_t) pid;
        *ret_tid = (uint32_t) tid;
        *ret_self = q->pid == 0 || (pid == edfd_self_pid() && tid == edfd_self_tid());
        return 0;
}

int edfd_admit(edfd *e, const edfd_request *q, uint64_t *ret_id) {
        sd_bus_message *reply = NULL;
        uint32_t pid, tid;
        uint64_t id;
        bool self;
        int r;

        r = request_begin(e, q, "Admit", &pid, &tid, &self);
        if (r < 0)
                return r;
        r = edfd_call(e, "Admit", self, &reply, "uustttt", pid, tid, q->group ?: "", q->runtime, q->deadline, q->period,
                      q->flags);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "t", &id);
        sd_bus_message_unref(reply);
        if (r <= 0)
                return edfd_fail_parse(e, r, "Admit");
        if (ret_id)
                *ret_id = id;
        return 0;
}

int edfd_admit_at_start(edfd *e, const edfd_request *q, uint64_t bound_ns) {
        uint32_t pid, tid;
        bool self;
        int r;

        r = request_begin(e, q, "AdmitAtStart", &pid, &tid, &self);
        if (r < 0)
                return r;
        if (bound_ns == 0)
                return edfd_fail(e, -EINVAL, "AdmitAtStart: the start-up bound is 0");
        if (q->pid != 0 && tid != pid)
                return edfd_fail(e, -EINVAL, "AdmitAtStart: thread %u is not the main thread of process %u: an "
                                 "admission at start is of a process's main thread", tid, pid);
        return edfd_call(e, "AdmitAtStart", false, NULL, "usttttt", q->pid ? pid : 0, q->group ?: "", q->runtime,
                         q->deadline, q->period, q->flags, bound_ns);
}

int edfd_admit_split(edfd *e, const edfd_request *q, pid_t tid2, edfd_split **ret) {
        sd_bus_message *reply = NULL;
        edfd_split *s;
        uint32_t pid, tid;
        bool self;
        int r;

        r = request_begin(e, q, "AdmitSplit", &pid, &tid, &self);
        if (r < 0)
                return r;
        if (!ret)
                return edfd_fail(e, -EINVAL, "AdmitSplit: no place for the result (NULL)");
        if (tid2 <= 0)
                return edfd_fail(e, -EINVAL, "AdmitSplit: the second thread id %d is not a thread id", (int) tid2);
        s = calloc(1, sizeof *s);
        if (!s)
                return edfd_fail(e, -ENOMEM, "AdmitSplit: out of memory");
        r = edfd_call(e, "AdmitSplit", self, &reply, "uuustttt", pid, tid, (uint32_t) tid2, q->group ?: "", q->runtime,
                      q->deadline, q->period, q->flags);
        if (r >= 0) {
                r = sd_bus_message_read(reply, "ttuttu", &s->id[0], &s->runtime[0], &s->cpu[0], &s->id[1],
                                        &s->runtime[1], &s->cpu[1]);
                sd_bus_message_unref(reply);
                r = r > 0 ? 0 : edfd_fail_parse(e, r, "AdmitSplit");
        }
        if (r < 0) {
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

edfd_split *edfd_split_free(edfd_split *s) {
        free(s);
        return NULL;
}

uint64_t edfd_split_id(const edfd_split *s, unsigned stage) {
        return s && (stage == 1 || stage == 2) ? s->id[stage - 1] : 0;
}

uint64_t edfd_split_runtime(const edfd_split *s, unsigned stage) {
        return s && (stage == 1 || stage == 2) ? s->runtime[stage - 1] : 0;
}

unsigned edfd_split_cpu(const edfd_split *s, unsigned stage) {
        return s && (stage == 1 || stage == 2) ? s->cpu[stage - 1] : 0;
}

int edfd_update(edfd *e, uint64_t id, uint64_t runtime, uint64_t deadline, uint64_t period) {
        int r = edfd_begin(e);

        if (r < 0)
                return r;
        if (id == 0)
                return edfd_fail(e, -EINVAL, "Update: reservation id 0 (ids start at 1)");
        return edfd_call(e, "Update", false, NULL, "tttt", id, runtime, deadline, period);
}

int edfd_release(edfd *e, uint64_t id) {
        int r = edfd_begin(e);

        if (r < 0)
                return r;
        if (id == 0)
                return edfd_fail(e, -EINVAL, "Release: reservation id 0 (ids start at 1)");
        return edfd_call(e, "Release", false, NULL, "t", id);
}

int edfd_release_thread(edfd *e, pid_t tid) {
        int r = edfd_begin(e);

        if (r < 0)
                return r;
        if (tid < 0)
                return edfd_fail(e, -EINVAL, "ReleaseThread: thread id %d is negative", (int) tid);
        return edfd_call(e, "ReleaseThread", false, NULL, "u", (uint32_t) (tid ?: edfd_self_tid()));
}

int edfd_release_process(edfd *e, pid_t pid) {
        sd_bus_message *reply = NULL;
        uint32_t n;
        int r = edfd_begin(e);

        if (r < 0)
                return r;
        if (pid < 0)
                return edfd_fail(e, -EINVAL, "ReleaseProcess: process id %d is negative", (int) pid);
        r = edfd_call(e, "ReleaseProcess", false, &reply, "u", (uint32_t) (pid ?: edfd_self_pid()));
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "u", &n);
        sd_bus_message_unref(reply);
        if (r <= 0)
                return edfd_fail_parse(e, r, "ReleaseProcess");
        return n > INT32_MAX ? INT32_MAX : (int) n;
}

int edfd_job_done(void) {
        return sched_yield() < 0 ? -errno : 0;
}

/* --- groups and the daemon --- */

static int group_call(edfd *e, const char *method, const char *path, bool sized, uint64_t runtime, uint64_t period) {
        int r = edfd_begin(e);

        if (r < 0)
                return r;
        if (!path || !*path)
                return edfd_fail(e, -EINVAL, "%s: no group path (%s)", method, path ? "empty" : "NULL");
        if (!sized)
                return edfd_call(e, method, false, NULL, "s", path);
        return edfd_call(e, method, false, NULL, "stt", path, runtime, period);
}

int edfd_group_create(edfd *e, const char *path, uint64_t runtime, uint64_t period) {
        return group_call(e, "CreateGroup", path, true, runtime, period);
}

int edfd_group_create_with_users(edfd *e, const char *path, uint64_t runtime, uint64_t period,
                                 const char *const *users) {
        sd_bus_message *call = NULL;
        int r = edfd_begin(e);

        if (r < 0)
                return r;
        if (!path || !*path)
                return edfd_fail(e, -EINVAL, "CreateGroupWithUsers: no group path (%s)", path ? "empty" : "NULL");
        if (!users)
                return edfd_fail(e, -EINVAL, "CreateGroupWithUsers: no users list (NULL; { NULL } is root only)");
        r = edfd_call_new(e, "CreateGroupWithUsers", &call);
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "stt", path, runtime, period);
        if (r >= 0)
                r = sd_bus_message_append_strv(call, (char **) users);
        if (r < 0) {
                sd_bus_message_unref(call);
                if (r == -EINVAL)
                        return edfd_fail(e, r, "cannot make the CreateGroupWithUsers call: a string is not valid UTF-8");
                return edfd_fail(e, r, "cannot make the CreateGroupWithUsers call: %s", strerror(-r));
        }
        r = edfd_call_send(e, call, "CreateGroupWithUsers", false, NULL);
        sd_bus_message_unref(call);
        return r;
}

int edfd_group_set(edfd *e, const char *path, uint64_t runtime, uint64_t period) {
        return group_call(e, "SetGroup", path, true, runtime, period);
}

int edfd_group_remove(edfd *e, const char *path) {
        return group_call(e, "RemoveGroup", path, false, 0, 0);
}

int edfd_reload(edfd *e) {
        int r = edfd_begin(e);

        return r < 0 ? r : edfd_call(e, "Reload", false, NULL, NULL);
}

int edfd_echo(edfd *e, uint64_t value, uint64_t *ret) {
        sd_bus_message *reply = NULL;
        uint64_t v;
        int r = edfd_begin(e);

        if (r < 0)
                return r;
        r = edfd_call(e, "Echo", false, &reply, "t", value);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "t", &v);
        sd_bus_message_unref(reply);
        if (r <= 0)
                return edfd_fail_parse(e, r, "Echo");
        if (ret)
                *ret = v;
        return 0;
}

/* --- a{sv} --- */

int edfd_read_dict(sd_bus_message *m, const edfd_dict_field *map, size_t n_map, void *base) {
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r <= 0)
                return r < 0 ? r : -EBADMSG;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *name, *contents;
                bool done = false;
                char type;

                r = sd_bus_message_read(m, "s", &name);
                if (r < 0)
                        return r;
                r = sd_bus_message_peek_type(m, &type, &contents);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n_map && !done; i++) {
                        char sig[2] = { map[i].type, '\0' };
                        if (strcmp(name, map[i].name) != 0 || strcmp(contents, sig) != 0)
                                continue;
                        r = sd_bus_message_read(m, "v", sig, (char *) base + map[i].offset);
                        if (r < 0)
                                return r;
                        done = true;
                }
                if (!done) {
                        r = sd_bus_message_skip(m, "v");
                        if (r < 0)
                                return r;
                }
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

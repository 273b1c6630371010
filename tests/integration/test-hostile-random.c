/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* A hostile unprivileged caller, at random (issue 41, item 5): uid 65534 on a bus connection of its
 * own makes 10,000 calls (EDFD_HOSTILE_CALLS) spread over every method that edfd's manager interface
 * introspects, so that a method added later is called too, from its introspected signature. The
 * arguments are random and malformed: wrong signatures made of any type sd-bus can build (variants,
 * arrays, dicts, structs, fds), 0, UINT32_MAX, UINT64_MAX and other boundaries, strings with control
 * bytes, 4 KiB and 64 KiB strings, invalid UTF-8 (sd-bus refuses to build those: D-Bus requires
 * valid UTF-8, and that refusal is counted), the caller's own pid and tids, its sleeping processes',
 * root's, pid 1, a kernel thread, edfd's and dbus-daemon's pids, a pid of no process; and, in
 * about 40% of the calls, values close to plausible ones, so that admissions, updates, releases and
 * watches (AdmitAtStart) really happen. The properties, Introspect and Peer are called too. The seed is
 * printed; EDFD_HOSTILE_SEED=N repeats a run.
 *
 * While it runs, root calls Echo every 20 ms; the latencies and edfd's CPU are printed (not asserted:
 * speed is for tests/bench/bench-hostile). Every reply is checked as it comes: an error carries an
 * org.edfd.Admission1.Error.* name with a message or a standard org.freedesktop.DBus.Error.* name,
 * never Failed, a System.Error.* errno or no answer; a call with a signature other than the
 * method's is refused with InvalidArgs; nothing that needs root succeeds; every admission nobody
 * gets is of its own process. Afterwards: the same edfd process still runs (never restarted) and
 * answers root's Echo; the books balance (every group's allocated is what its children and
 * reservations hold) and the kernel agrees with each reservation; nobody holds no more than its
 * limits (4 reservations, 2% of a CPU; and no more than 4 watches, AdmitAtStart's, either: it has
 * 7 processes to watch, its own and 6 sleeping ones); edfd's own consistency check at its next resync finds nothing; when nobody's
 * processes exit, everything they held goes. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "agent.h"
#include "basic/proc.h"
#include "harness.h"
#include "shared/protocol.h"

#define MS HARNESS_MSEC
#define US (HARNESS_MSEC / 1000)
#define P100 (100 * MS)
#define NOBODY AGENT_NOBODY

#define N_SLEEPERS 6          /* nobody's sleeping processes (2 threads each): more than it may hold */
#define LIMIT_RESERVATIONS 4  /* nobody's limits in the configuration below */
#define LIMIT_BW_PERCENT 2
#define CALL_TIMEOUT_USEC (20 * UINT64_C(1000000))
#define ECHO_EVERY_USEC 20000
#define MAX_METHODS 64
#define MAX_PROPS 64

TestSuite(hostile_random, .fini = harness_fini, .timeout = 600);

/* nobody may hold 2% in 4 reservations; its rate limit is lifted. At the shipped 50 requests per
 * 10 s (conf/edfd.yaml), the run's ~4,000 calls that count (admissions, updates, plans) would take
 * over 13 minutes; tests/bench/bench-hostile attacks at the shipped rate. The groups: two open to
 * anyone (one with a cgroup), one for root alone, one for nobody at all. */
static const char config_yaml[] =
        "capacity: auto\n"
        "default-group: open\n"
        "polkit: auto\n"
        "fork: split\n"
        "threads: none\n"
        "limits:\n"
        "  nobody:\n"
        "    bandwidth: 2%\n"
        "    reservations: 4\n"
        "    rate: unlimited\n"
        "groups:\n"
        "  open:\n"
        "    bandwidth: 5%\n"
        "    groups:\n"
        "      sub:\n"
        "        bandwidth: 1%\n"
        "      cg:\n"
        "        bandwidth: 1%\n"
        "        cgroup: true\n"
        "  rootonly:\n"
        "    bandwidth: 1%\n"
        "    users: [root]\n"
        "  closed:\n"
        "    bandwidth: 1%\n"
        "    users: []\n";

static uint64_t mono_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

/* ---- random numbers ---- */

static uint64_t rng_state;

static uint64_t rnd(void) {
        /* splitmix64 */
        uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

static size_t pick(size_t n) {
        return (size_t) (rnd() % n);
}

#define PICK(a) ((a)[pick(ELEMENTSOF(a))])

/* ---- what crosses from nobody's process to the test ---- */

typedef enum RecordKind {
        REC_HELLO,    /* nobody is connected: its pids, and the methods it found */
        REC_CALL,     /* one call and its outcome */
        REC_END,      /* all calls made */
        REC_FATAL,    /* nobody's process could not go on: message says why */
} RecordKind;

typedef struct Record {
        RecordKind kind;
        unsigned index;
        char member[64];
        char iface[64];
        char sig[128];        /* what was sent */
        char want_sig[128];   /* the method's own in-signature ("?" for an unknown member) */
        bool wrong_sig;       /* sent with a signature other than the method's */
        bool invalid_value;   /* a string, object path or signature that D-Bus may not allow was put in */
        bool built;           /* false: sd-bus refused to build the message (built_r) */
        bool cleanup;         /* the test's own ReleaseThread of the calling thread, not a random call */
        int built_r;
        int r;                /* sd_bus_call's */
        char name[128];
        char message[256];
        char desc[256];       /* the call, shortened */
        uint32_t u[3];        /* the first u arguments (pid, tid...) */
        unsigned n_u;
        uint64_t usec;        /* how long the call took */
} Record;

typedef struct Hello {
        pid_t pid, caller_tid, extra_tids[2];
        pid_t sleepers[N_SLEEPERS], sleeper_tids[N_SLEEPERS];
        unsigned n_methods, n_props;
        char methods[MAX_METHODS][64];
        char method_sigs[MAX_METHODS][128];
        char props[MAX_PROPS][64];
} Hello;

/* What nobody's process knows before it starts (set by the test before the fork). */
typedef struct Ctx {
        const char *bus_address;
        uint64_t seed;
        unsigned n_calls;
        pid_t test_pid, root_child, root_child_tid2, edfd, dbus, kthread, dead;
        int fd;               /* nobody's end of the socket pair */

        /* nobody's side */
        Hello hello;
        sd_bus *bus;
        uint64_t ids[32];
        size_t n_ids;
        int devnull;
} Ctx;

static Ctx ctx;

_Noreturn static void nobody_fatal(const char *fmt, ...) {
        Record rec = { .kind = REC_FATAL };
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(rec.message, sizeof rec.message, fmt, ap);
        va_end(ap);
        (void) send(ctx.fd, &rec, sizeof rec, MSG_NOSIGNAL);
        _exit(3);
}

static void record_send(const void *p, size_t n) {
        if (send(ctx.fd, p, n, MSG_NOSIGNAL) != (ssize_t) n)
                _exit(4); /* the test is gone */
}

/* ---- a description of the call, for messages ---- */

typedef struct Desc {
        char buf[256];
        size_t n;
} Desc;

_printf_(2, 3) static void desc_add(Desc *d, const char *fmt, ...) {
        va_list ap;
        int k;

        if (d->n >= sizeof d->buf - 1)
                return;
        va_start(ap, fmt);
        k = vsnprintf(d->buf + d->n, sizeof d->buf - d->n, fmt, ap);
        va_end(ap);
        if (k > 0)
                d->n = MIN(d->n + (size_t) k, sizeof d->buf - 1);
}

static void desc_string(Desc *d, const char *s) {
        size_t len = strlen(s);

        desc_add(d, "\"");
        for (size_t i = 0; i < len && i < 24; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
                        desc_add(d, "%c", c);
                else
                        desc_add(d, "\\x%02x", c);
        }
        desc_add(d, len > 24 ? "\"...(%zu bytes)" : "\"", len);
}

/* ---- values ---- */

/* A pid or tid: nobody's own (its process, the calling thread, its other threads, its sleeping
 * processes and their second threads), others' (the test's, root's child, pid 1, kthreadd, a kernel
 * thread, edfd, dbus-daemon, a pid of no process), boundaries. */
static uint32_t value_pid(bool own_only) {
        const Hello *o = &ctx.hello;
        unsigned k = (unsigned) pick(own_only ? 6 : 12);

        switch (k) {
        case 0:
                return (uint32_t) o->pid;
        case 1:
                return pick(4) == 0 ? (uint32_t) o->caller_tid : (uint32_t) PICK(o->extra_tids);
        case 2:
        case 3:
                return (uint32_t) PICK(o->sleepers);
        case 4:
                return (uint32_t) PICK(o->sleeper_tids);
        case 5:
                return own_only ? 0 : (uint32_t) o->pid;
        case 6:
                return PICK(((uint32_t[]) { 1, 2, (uint32_t) ctx.kthread, (uint32_t) ctx.test_pid }));
        case 7:
                return PICK(((uint32_t[]) { (uint32_t) ctx.root_child, (uint32_t) ctx.root_child_tid2,
                                            (uint32_t) ctx.edfd, (uint32_t) ctx.dbus }));
        case 8:
                return (uint32_t) ctx.dead;
        case 9:
                return PICK(((uint32_t[]) { 0, (uint32_t) INT32_MAX, (uint32_t) INT32_MAX + 1, UINT32_MAX - 1,
                                            UINT32_MAX, (uint32_t) -(int32_t) o->pid }));
        case 10:
                return 0;
        default:
                return (uint32_t) rnd();
        }
}

/* One of nobody's processes and one of its threads: its main thread (tid 0) or another. */
static void value_own_thread(uint32_t *ret_pid, uint32_t *ret_tid) {
        const Hello *o = &ctx.hello;
        unsigned k = (unsigned) pick(N_SLEEPERS + 1);

        if (k == N_SLEEPERS) {
                *ret_pid = pick(3) == 0 ? 0 : (uint32_t) o->pid;
                *ret_tid = PICK(((uint32_t[]) { 0, 0, (uint32_t) o->extra_tids[0], (uint32_t) o->extra_tids[1],
                                                (uint32_t) o->caller_tid }));
        } else {
                *ret_pid = (uint32_t) o->sleepers[k];
                *ret_tid = PICK(((uint32_t[]) { 0, (uint32_t) o->sleepers[k], (uint32_t) o->sleeper_tids[k] }));
        }
}

static uint64_t value_id(void) {
        if (ctx.n_ids > 0 && pick(2) == 0)
                return ctx.ids[pick(ctx.n_ids)];
        return PICK(((uint64_t[]) { 0, 1, 2, 3, 5, 8, 100, UINT32_MAX, UINT64_C(1) << 32, INT64_MAX, UINT64_MAX }));
}

static const uint64_t durations[] = { 0,
                                      1,
                                      1023,
                                      1024,
                                      100 * US,
                                      200 * US,
                                      500 * US,
                                      MS,
                                      2 * MS,
                                      10 * MS,
                                      100 * MS,
                                      1000 * MS,
                                      UINT64_C(4194304000),
                                      UINT64_C(4194304001),
                                      UINT64_C(3600) * 1000 * MS,
                                      UINT64_C(1) << 44,
                                      UINT64_C(1) << 63,
                                      UINT64_MAX - 1,
                                      UINT64_MAX };

static uint64_t value_t(void) {
        switch (pick(8)) {
        case 0:
                return value_id();
        case 1:
                return PICK(((uint64_t[]) { 0, 1, 2, 3, 4, 7, 8, 15, UINT64_C(1) << 63 })); /* flags */
        case 2:
                return rnd();
        default:
                return PICK(durations);
        }
}

static const char *const group_like[] = {
        "",           "open",       "open",        "open/sub",     "open/cg",       "rootonly",
        "closed",     "nosuch",     "/",           ".",            "..",            "open/..",
        "open/../sub", "open//sub", "/open",       "open/",        "open/sub/deep", "Open",
        "open\n",     "open sub",   "open\t",      "cgroup.procs", "open/cgroup.procs", "-open",
        "open/sub/../../rootonly", "t\xc3\xa9st", "\xe2\x82\xac", "\xf0\x9d\x84\x9e",
};

/* A string for an 's'. *invalid is set when it is not valid UTF-8 (sd-bus then refuses the call). */
static char *value_string(bool *invalid) {
        static const char *const bad_utf8[] = { "\x80", "\xff", "\xc0\x80", "\xed\xa0\x80", "\xe2\x82",
                                                "\xf4\x90\x80\x80", "\xc3\x28", "\xfe\xfe" };
        size_t len, i;
        char *s;

        if (pick(2) == 0) {
                s = strdup(PICK(group_like));
                cr_assert(s);
                return s;
        }
        len = PICK(((size_t[]) { 0, 1, 2, 3, 5, 8, 16, 63, 64, 65, 255, 256, 299, 4096, 65536 }));
        s = malloc(len + 1);
        cr_assert(s);
        i = 0;
        while (i < len) {
                unsigned k = (unsigned) pick(10);
                if (k < 5)
                        s[i++] = (char) (0x20 + pick(0x5f)); /* printable ASCII */
                else if (k < 7)
                        s[i++] = PICK(((char[]) { '/', '.', '/', 'a' }));
                else if (k < 8)
                        s[i++] = (char) (1 + pick(0x1f)); /* a control byte */
                else if (k < 9 && i + 4 <= len) {
                        const char *u = PICK(((const char *[]) { "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9d\x84\x9e",
                                                                 "\x7f", "\xef\xbb\xbf" }));
                        memcpy(s + i, u, strlen(u));
                        i += strlen(u);
                } else if (pick(4) == 0 && i + 4 <= len) {
                        const char *b = PICK(bad_utf8);
                        memcpy(s + i, b, strlen(b));
                        i += strlen(b);
                        *invalid = true;
                } else
                        s[i++] = 'a';
        }
        s[i] = '\0';
        return s;
}

static const char *value_path(bool *invalid) {
        static const char *const ok[] = { "/", "/org/edfd/Admission1", "/org/edfd", "/a/b_c/D9", "/org/freedesktop/DBus" };
        static const char *const bad[] = { "", "a", "/a/", "//", "/a-b", "/a//b", "/\xc3\xa9" };

        if (pick(4) == 0) {
                *invalid = true;
                return PICK(bad);
        }
        return PICK(ok);
}

/* A random complete type into buf (at most cap - 1 chars; returns false when it did not fit). No
 * fds below depth 0: an array of them would pass dbus-daemon's limit of fds per message, and the bus
 * would drop the connection. */
static bool random_type(char *buf, size_t *n, size_t cap, unsigned depth) {
        const char *basic = depth == 0 ? "ybnqiuxtdsogh" : "ybnqiuxtdsog";
        static const char keys[] = "ybnqiuxtdsog";
        unsigned k = (unsigned) pick(depth >= 3 ? 1 : 10);

        if (*n + 4 >= cap)
                return false;
        if (k < 5) {
                buf[(*n)++] = basic[pick(strlen(basic))];
        } else if (k < 6) {
                buf[(*n)++] = 'v';
        } else if (k < 7) {
                buf[(*n)++] = 'a';
                return random_type(buf, n, cap, depth + 1);
        } else if (k < 8) {
                buf[(*n)++] = 'a';
                buf[(*n)++] = '{';
                buf[(*n)++] = keys[pick(sizeof keys - 1)];
                if (!random_type(buf, n, cap, depth + 1) || *n + 1 >= cap)
                        return false;
                buf[(*n)++] = '}';
        } else {
                unsigned members = 1 + (unsigned) pick(4);
                buf[(*n)++] = '(';
                for (unsigned i = 0; i < members; i++)
                        if (!random_type(buf, n, cap, depth + 1))
                                return false;
                if (*n + 1 >= cap)
                        return false;
                buf[(*n)++] = ')';
        }
        buf[*n] = '\0';
        return true;
}

static void random_signature(char *buf, size_t cap, unsigned max_types) {
        for (;;) {
                size_t n = 0;
                unsigned types = (unsigned) pick(max_types + 1);
                bool ok = true;

                buf[0] = '\0';
                for (unsigned i = 0; ok && i < types; i++)
                        ok = random_type(buf, &n, cap, 0);
                if (ok)
                        return;
        }
}

static size_t type_len(const char *sig);

/* Whether sig is a sequence of complete types. */
static bool sig_valid(const char *sig) {
        for (size_t i = 0; sig[i];) {
                size_t n = type_len(sig + i);
                if (n == 0)
                        return false;
                i += n;
        }
        return true;
}

/* The length of the complete type at sig; 0 if there is none. */
static size_t type_len(const char *sig) {
        size_t i;

        switch (*sig) {
        case '\0':
                return 0;
        case 'a': {
                size_t n = type_len(sig + 1);
                return n ? n + 1 : 0;
        }
        case '(':
        case '{': {
                char close = *sig == '(' ? ')' : '}';
                for (i = 1; sig[i] && sig[i] != close;) {
                        size_t n = type_len(sig + i);
                        if (n == 0)
                                return 0;
                        i += n;
                }
                return sig[i] == close ? i + 1 : 0;
        }
        default:
                return strchr("ybnqiuxtdsoghv", *sig) ? 1 : 0;
        }
}

typedef struct Call {
        sd_bus_message *m;
        Desc desc;
        bool invalid;
        uint32_t u[3];
        unsigned n_u;
} Call;

static int append_value(Call *c, const char *sig, size_t len, unsigned depth);

static int append_u(Call *c, uint32_t v) {
        if (c->n_u < ELEMENTSOF(c->u))
                c->u[c->n_u++] = v;
        desc_add(&c->desc, "%" PRIu32 ",", v);
        return sd_bus_message_append_basic(c->m, 'u', &v);
}

static int append_t(Call *c, uint64_t v) {
        desc_add(&c->desc, "%" PRIu64 ",", v);
        return sd_bus_message_append_basic(c->m, 't', &v);
}

static int append_s(Call *c, const char *s) {
        desc_string(&c->desc, s);
        desc_add(&c->desc, ",");
        return sd_bus_message_append_basic(c->m, 's', s);
}

static int append_random_s(Call *c) {
        _cleanup_free_ char *s = value_string(&c->invalid);

        return append_s(c, s);
}

/* One value of the complete type sig[0..len), drawn from the pools above. */
static int append_value(Call *c, const char *sig, size_t len, unsigned depth) {
        char inner[256];
        int r;

        switch (sig[0]) {
        case 'y': {
                uint8_t v = (uint8_t) rnd();
                desc_add(&c->desc, "y%u,", v);
                return sd_bus_message_append_basic(c->m, 'y', &v);
        }
        case 'b': {
                int v = (int) pick(2);
                desc_add(&c->desc, "%s,", v ? "true" : "false");
                return sd_bus_message_append_basic(c->m, 'b', &v);
        }
        case 'n': {
                int16_t v = PICK(((int16_t[]) { 0, -1, INT16_MIN, INT16_MAX, (int16_t) rnd() }));
                desc_add(&c->desc, "n%d,", v);
                return sd_bus_message_append_basic(c->m, 'n', &v);
        }
        case 'q': {
                uint16_t v = PICK(((uint16_t[]) { 0, 1, UINT16_MAX, (uint16_t) rnd() }));
                desc_add(&c->desc, "q%u,", v);
                return sd_bus_message_append_basic(c->m, 'q', &v);
        }
        case 'i': {
                int32_t v = pick(2) ? (int32_t) value_pid(false) : PICK(((int32_t[]) { 0, -1, INT32_MIN, INT32_MAX }));
                desc_add(&c->desc, "i%" PRId32 ",", v);
                return sd_bus_message_append_basic(c->m, 'i', &v);
        }
        case 'u':
                return append_u(c, value_pid(false));
        case 'x': {
                int64_t v = pick(2) ? (int64_t) value_t() : PICK(((int64_t[]) { 0, -1, INT64_MIN, INT64_MAX }));
                desc_add(&c->desc, "x%" PRId64 ",", v);
                return sd_bus_message_append_basic(c->m, 'x', &v);
        }
        case 't':
                return append_t(c, value_t());
        case 'd': {
                double v = PICK(((double[]) { 0.0, -0.0, -1.0, 1e300, -1e300, NAN, INFINITY, -INFINITY, 4.2e-320 }));
                desc_add(&c->desc, "d%g,", v);
                return sd_bus_message_append_basic(c->m, 'd', &v);
        }
        case 's':
                return append_random_s(c);
        case 'o': {
                const char *p = value_path(&c->invalid);
                desc_add(&c->desc, "o");
                desc_string(&c->desc, p);
                return sd_bus_message_append_basic(c->m, 'o', p);
        }
        case 'g': {
                char g[256];
                if (pick(5) == 0) {
                        /* not a signature: unbalanced, or a type code D-Bus does not have */
                        snprintf(g, sizeof g, "%s", PICK(((const char *[]) { "(", "a", "a{vs}", "z", "((u)", "u)" })));
                        c->invalid = true;
                } else
                        random_signature(g, 64, 4);
                desc_add(&c->desc, "g\"%s\",", g);
                return sd_bus_message_append_basic(c->m, 'g', g);
        }
        case 'h':
                desc_add(&c->desc, "fd,");
                return sd_bus_message_append_basic(c->m, 'h', &ctx.devnull);
        case 'v': {
                char v[128];
                size_t n = 0;
                while (!random_type(v, &n, sizeof v, depth + 1))
                        n = 0;
                desc_add(&c->desc, "v(%s:", v);
                r = sd_bus_message_open_container(c->m, 'v', v);
                if (r >= 0)
                        r = append_value(c, v, strlen(v), depth + 1);
                if (r >= 0)
                        r = sd_bus_message_close_container(c->m);
                desc_add(&c->desc, "),");
                return r;
        }
        case 'a': {
                size_t elen = len - 1;
                unsigned count = PICK(((unsigned[]) { 0, 0, 1, 1, 2, 3, 5, 40 }));
                if (depth > 3)
                        count = MIN(count, 1u);
                snprintf(inner, sizeof inner, "%.*s", (int) elen, sig + 1);
                desc_add(&c->desc, "[%u:", count);
                r = sd_bus_message_open_container(c->m, 'a', inner);
                for (unsigned i = 0; r >= 0 && i < count; i++) {
                        if (inner[0] == '{') {
                                char kv[256];
                                size_t klen;
                                snprintf(kv, sizeof kv, "%.*s", (int) (elen - 2), inner + 1);
                                klen = type_len(kv);
                                r = sd_bus_message_open_container(c->m, 'e', kv);
                                if (r >= 0)
                                        r = append_value(c, kv, klen, depth + 1);
                                if (r >= 0)
                                        r = append_value(c, kv + klen, strlen(kv) - klen, depth + 1);
                                if (r >= 0)
                                        r = sd_bus_message_close_container(c->m);
                        } else
                                r = append_value(c, inner, elen, depth + 1);
                }
                if (r >= 0)
                        r = sd_bus_message_close_container(c->m);
                desc_add(&c->desc, "],");
                return r;
        }
        case '(': {
                snprintf(inner, sizeof inner, "%.*s", (int) (len - 2), sig + 1);
                desc_add(&c->desc, "(");
                r = sd_bus_message_open_container(c->m, 'r', inner);
                for (size_t i = 0; r >= 0 && inner[i];) {
                        size_t n = type_len(inner + i);
                        if (n == 0)
                                return -EINVAL;
                        r = append_value(c, inner + i, n, depth + 1);
                        i += n;
                }
                if (r >= 0)
                        r = sd_bus_message_close_container(c->m);
                desc_add(&c->desc, "),");
                return r;
        }
        default:
                return -EINVAL;
        }
}

/* Every value of a whole signature, at random. */
static int append_signature(Call *c, const char *sig) {
        int r = 0;

        for (size_t i = 0; r >= 0 && sig[i];) {
                size_t n = type_len(sig + i);
                if (n == 0)
                        return -EINVAL;
                r = append_value(c, sig + i, n, 0);
                i += n;
        }
        return r;
}

/* ---- plausible calls for the methods this test knows ---- */

static const char *group_plausible(void) {
        return PICK(((const char *[]) { "", "", "open", "open", "open/sub", "open/cg", "rootonly", "closed", "nosuch" }));
}

static uint64_t runtime_plausible(void) {
        return PICK(((uint64_t[]) { 100 * US, 100 * US, 200 * US, 300 * US, 500 * US, MS, 2 * MS }));
}

static uint64_t period_plausible(void) {
        return PICK(((uint64_t[]) { 10 * MS, P100, P100, P100, 1000 * MS }));
}

static uint64_t deadline_plausible(void) {
        return PICK(((uint64_t[]) { 0, 0, 0, 5 * MS, 50 * MS }));
}

static uint64_t flags_plausible(void) {
        return PICK(((uint64_t[]) { 0, 0, 0, 1, 2, 3, 4 }));
}

static int append_plan_tasks(Call *c) {
        unsigned n = PICK(((unsigned[]) { 0, 1, 1, 2, 3, 8, 64, 1024, 1025 }));
        int r;

        desc_add(&c->desc, "[%u tasks:", n);
        r = sd_bus_message_open_container(c->m, 'a', "(sstttb)");
        for (unsigned i = 0; r >= 0 && i < n; i++) {
                _cleanup_free_ char *name = NULL;
                bool plausible = pick(3) != 0;
                int split = (int) pick(2);
                char buf[32];
                Desc keep = c->desc; /* only the first task goes into the description */

                if (pick(4) == 0)
                        name = value_string(&c->invalid);
                else {
                        snprintf(buf, sizeof buf, "task%u", i);
                        name = strdup(buf);
                        cr_assert(name);
                }
                r = sd_bus_message_open_container(c->m, 'r', "sstttb");
                if (r >= 0)
                        r = append_s(c, name);
                if (r >= 0)
                        r = plausible ? append_s(c, group_plausible()) : append_random_s(c);
                if (r >= 0)
                        r = append_t(c, plausible ? runtime_plausible() : value_t());
                if (r >= 0)
                        r = append_t(c, plausible ? deadline_plausible() : value_t());
                if (r >= 0)
                        r = append_t(c, plausible ? period_plausible() : value_t());
                if (r >= 0)
                        r = sd_bus_message_append_basic(c->m, 'b', &split);
                if (r >= 0)
                        r = sd_bus_message_close_container(c->m);
                if (i > 0)
                        c->desc = keep;
        }
        if (r >= 0)
                r = sd_bus_message_close_container(c->m);
        desc_add(&c->desc, "]");
        return r;
}

/* Appends plausible arguments for member if the test knows it and sig is the signature it knows;
 * returns 1 then, 0 when it does not know the method (the caller appends random values instead). */
static int append_plausible(Call *c, const char *member, const char *sig) {
        int r;

#define KNOWN(name, s) (strcmp(member, name) == 0 && strcmp(sig, s) == 0)
        if (KNOWN("Admit", "uustttt")) {
                uint32_t pid, tid;
                if (pick(3) == 0)
                        pid = value_pid(true), tid = pick(2) ? 0 : value_pid(true);
                else
                        value_own_thread(&pid, &tid);
                if ((r = append_u(c, pid)) < 0 || (r = append_u(c, tid)) < 0 || (r = append_s(c, group_plausible())) < 0 ||
                    (r = append_t(c, runtime_plausible())) < 0 || (r = append_t(c, deadline_plausible())) < 0 ||
                    (r = append_t(c, period_plausible())) < 0 || (r = append_t(c, flags_plausible())) < 0)
                        return r;
        } else if (KNOWN("AdmitSplit", "uuustttt")) {
                if ((r = append_u(c, value_pid(true))) < 0 || (r = append_u(c, value_pid(true))) < 0 ||
                    (r = append_u(c, value_pid(true))) < 0 || (r = append_s(c, group_plausible())) < 0 ||
                    (r = append_t(c, runtime_plausible())) < 0 || (r = append_t(c, deadline_plausible())) < 0 ||
                    (r = append_t(c, period_plausible())) < 0 || (r = append_t(c, flags_plausible())) < 0)
                        return r;
        } else if (KNOWN("AdmitAtStart", "usttttt")) {
                if ((r = append_u(c, value_pid(true))) < 0 || (r = append_s(c, group_plausible())) < 0 ||
                    (r = append_t(c, runtime_plausible())) < 0 || (r = append_t(c, deadline_plausible())) < 0 ||
                    (r = append_t(c, period_plausible())) < 0 || (r = append_t(c, flags_plausible())) < 0 ||
                    (r = append_t(c, PICK(((uint64_t[]) { 0, MS, 1000 * MS, UINT64_C(3600) * 1000 * MS,
                                                          UINT64_C(3600) * 1000 * MS + 1, UINT64_MAX })))) < 0)
                        return r;
        } else if (KNOWN("Update", "tttt")) {
                if ((r = append_t(c, value_id())) < 0 || (r = append_t(c, runtime_plausible())) < 0 ||
                    (r = append_t(c, deadline_plausible())) < 0 || (r = append_t(c, period_plausible())) < 0)
                        return r;
        } else if (KNOWN("Release", "t")) {
                if ((r = append_t(c, value_id())) < 0)
                        return r;
        } else if (KNOWN("ReleaseThread", "u") || KNOWN("ReleaseProcess", "u")) {
                if ((r = append_u(c, value_pid(true))) < 0)
                        return r;
        } else if (KNOWN("Plan", "a(sstttb)")) {
                if ((r = append_plan_tasks(c)) < 0)
                        return r;
        } else if (KNOWN("CreateGroup", "stt") || KNOWN("SetGroup", "stt")) {
                if ((r = append_s(c, PICK(((const char *[]) { "open/new", "open/sub", "open", "x", "rootonly/x" })))) < 0 ||
                    (r = append_t(c, runtime_plausible())) < 0 || (r = append_t(c, period_plausible())) < 0)
                        return r;
        } else if (KNOWN("RemoveGroup", "s")) {
                if ((r = append_s(c, group_plausible())) < 0)
                        return r;
        } else
                return 0;
#undef KNOWN
        return 1;
}

/* ---- nobody's process ---- */

/* The methods and properties of edfd's manager interface, from its introspection data. */
static void introspect(void) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Hello *o = &ctx.hello;
        const char *xml, *p, *end;
        char head[128];
        int r;

        r = sd_bus_call_method(ctx.bus, EDFD_BUS_NAME, EDFD_BUS_PATH, "org.freedesktop.DBus.Introspectable",
                               "Introspect", &e, &reply, "");
        if (r < 0 || sd_bus_message_read(reply, "s", &xml) < 0)
                nobody_fatal("Introspect as nobody: %s", e.message ? e.message : strerror(-r));
        snprintf(head, sizeof head, "<interface name=\"%s\">", EDFD_BUS_INTERFACE);
        p = strstr(xml, head);
        if (!p)
                nobody_fatal("edfd's introspection has no %s", EDFD_BUS_INTERFACE);
        end = strstr(p, "</interface>");
        if (!end)
                nobody_fatal("edfd's introspection: %s does not end", EDFD_BUS_INTERFACE);
        for (const char *q = p; (q = strstr(q, "<property name=\"")) && q < end;) {
                q += strlen("<property name=\"");
                if (o->n_props < MAX_PROPS)
                        snprintf(o->props[o->n_props++], sizeof o->props[0], "%.*s", (int) strcspn(q, "\""), q);
        }
        for (const char *q = p; (q = strstr(q, "<method name=\"")) && q < end;) {
                const char *tag_end, *method_end;
                char *sig;

                q += strlen("<method name=\"");
                if (o->n_methods >= MAX_METHODS)
                        nobody_fatal("more than %d methods", MAX_METHODS);
                snprintf(o->methods[o->n_methods], sizeof o->methods[0], "%.*s", (int) strcspn(q, "\""), q);
                sig = o->method_sigs[o->n_methods];
                sig[0] = '\0';
                o->n_methods++;
                tag_end = strchr(q, '>');
                if (!tag_end || tag_end[-1] == '/')
                        continue; /* <method name="X"/>: no arguments */
                method_end = strstr(tag_end, "</method>");
                if (!method_end)
                        nobody_fatal("edfd's introspection: a method does not end");
                for (const char *a = tag_end; (a = strstr(a, "<arg ")) && a < method_end;) {
                        const char *a_end = strchr(a, '>'), *type = strstr(a, "type=\""), *dir = strstr(a, "direction=\"");
                        a += 5;
                        if (!a_end || !type || type > a_end)
                                nobody_fatal("edfd's introspection: an argument without a type");
                        if (dir && dir < a_end && strncmp(dir + strlen("direction=\""), "out", 3) == 0)
                                continue;
                        type += strlen("type=\"");
                        if (strlen(sig) + strcspn(type, "\"") >= sizeof o->method_sigs[0])
                                nobody_fatal("a signature too long");
                        strncat(sig, type, strcspn(type, "\""));
                }
        }
}

static void *sleeper_thread(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

/* A sleeping process of nobody with two threads; its second thread's tid through the pipe. */
static pid_t sleeper_start(pid_t *ret_tid2) {
        int p[2];
        pid_t pid, parent = getpid(), tid2 = 0;

        if (pipe2(p, O_CLOEXEC) < 0)
                nobody_fatal("pipe: %m");
        pid = fork();
        if (pid < 0)
                nobody_fatal("fork: %m");
        if (pid == 0) {
                pthread_t t;
                agent_die_with_parent(parent);
                if (pthread_create(&t, NULL, sleeper_thread, NULL) != 0)
                        _exit(1);
                /* The new thread's tid: the highest of /proc/self/task besides ours. */
                for (unsigned i = 0; i < 1000 && tid2 == 0; i++) {
                        DIR *d = opendir("/proc/self/task");
                        struct dirent *de;
                        while (d && (de = readdir(d)))
                                if (atoi(de->d_name) > 0 && atoi(de->d_name) != getpid())
                                        tid2 = atoi(de->d_name);
                        if (d)
                                closedir(d);
                        if (tid2 == 0)
                                usleep(1000);
                }
                (void) write(p[1], &tid2, sizeof tid2);
                close(p[1]);
                for (;;)
                        pause();
        }
        close(p[1]);
        if (read(p[0], &tid2, sizeof tid2) != (ssize_t) sizeof tid2 || tid2 <= 0)
                nobody_fatal("a sleeping process did not say its second thread");
        close(p[0]);
        *ret_tid2 = tid2;
        return pid;
}

static pid_t own_tid(void) {
        return (pid_t) gettid();
}

/* Whether the calling thread is SCHED_DEADLINE (edfd sets SCHED_RESET_ON_FORK beside it). */
static bool self_deadline(void) {
        int p = sched_getscheduler(0);

        return p >= 0 && (p & ~SCHED_RESET_ON_FORK) == SCHED_DEADLINE;
}

typedef struct Threads {
        pid_t tid;
} Threads;

static void *extra_thread(void *arg) {
        Threads *t = arg;

        __atomic_store_n(&t->tid, own_tid(), __ATOMIC_SEQ_CST);
        for (;;)
                pause();
        return NULL;
}

/* Ends the call: replies the record to the test. Remembers the ids nobody got. */
static void call_finish(Record *rec, sd_bus_message *reply) {
        if (rec->r >= 0 && reply) {
                uint64_t id = 0;
                if ((strcmp(rec->member, "Admit") == 0 || strcmp(rec->member, "AdmitSplit") == 0) &&
                    sd_bus_message_read_basic(reply, 't', &id) > 0 && id != 0) {
                        if (ctx.n_ids < ELEMENTSOF(ctx.ids))
                                ctx.ids[ctx.n_ids++] = id;
                        else
                                ctx.ids[pick(ELEMENTSOF(ctx.ids))] = id;
                }
                if (strcmp(rec->member, "AdmitSplit") == 0) {
                        uint32_t cpu;
                        uint64_t rt;
                        if (sd_bus_message_read(reply, "tu", &rt, &cpu) > 0 && sd_bus_message_read_basic(reply, 't', &id) > 0 &&
                            ctx.n_ids < ELEMENTSOF(ctx.ids))
                                ctx.ids[ctx.n_ids++] = id;
                }
        }
        record_send(rec, sizeof *rec);
}

/* One random call. */
static void nobody_call(unsigned index) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const Hello *o = &ctx.hello;
        Record rec = { .kind = REC_CALL, .index = index, .built = true };
        Call c = {};
        const char *path = EDFD_BUS_PATH;
        char sig[128] = "";
        unsigned what = (unsigned) pick(100);
        uint64_t t0;
        int r = 0;

        snprintf(rec.iface, sizeof rec.iface, "%s", EDFD_BUS_INTERFACE);
        if (what < 88) {
                /* A method of the manager: another signature (15%), else its own, with plausible
                 * values (half of those, where the test knows the method) or random ones. */
                unsigned k = (unsigned) pick(o->n_methods);
                unsigned mode = (unsigned) pick(100);
                snprintf(rec.member, sizeof rec.member, "%s", o->methods[k]);
                snprintf(rec.want_sig, sizeof rec.want_sig, "%s", o->method_sigs[k]);
                if (mode < 15) {
                        switch (pick(4)) {
                        case 0:
                                random_signature(sig, 100, 6);
                                break;
                        case 1: /* one more argument */
                                snprintf(sig, sizeof sig, "%s%c", o->method_sigs[k], PICK(((char[]) { 'u', 't', 's', 'b', 'v' })));
                                break;
                        case 2: /* one fewer */
                                snprintf(sig, sizeof sig, "%s", o->method_sigs[k]);
                                if (sig[0])
                                        sig[strlen(sig) - 1] = '\0';
                                /* "a(sstttb)" less its last char is no signature */
                                if (!sig_valid(sig))
                                        random_signature(sig, 100, 6);
                                break;
                        default: /* the right length, one type changed */
                                snprintf(sig, sizeof sig, "%s", o->method_sigs[k]);
                                for (size_t i = 0; sig[i]; i++)
                                        if (strchr("ut", sig[i]) && pick(2) == 0) {
                                                sig[i] = PICK(((char[]) { 'i', 'x', 'q', 'y', 'd', 'b', 'u', 't', 'h', 's' }));
                                                break;
                                        }
                        }
                } else
                        snprintf(sig, sizeof sig, "%s", o->method_sigs[k]);
        } else if (what < 95) {
                /* The properties: Get (of one that exists, mostly), GetAll, Set. */
                const char *prop = pick(5) == 0 ? PICK(((const char *[]) { "NoSuch", "", "capacity", "Version " }))
                                                : o->props[pick(o->n_props)];
                snprintf(rec.iface, sizeof rec.iface, "org.freedesktop.DBus.Properties");
                snprintf(rec.want_sig, sizeof rec.want_sig, "?");
                switch (pick(4)) {
                case 0:
                case 1:
                        snprintf(rec.member, sizeof rec.member, "Get");
                        break;
                case 2:
                        snprintf(rec.member, sizeof rec.member, "GetAll");
                        break;
                default:
                        snprintf(rec.member, sizeof rec.member, "Set");
                }
                r = sd_bus_message_new_method_call(ctx.bus, &c.m, EDFD_BUS_NAME, path, rec.iface, rec.member);
                if (r >= 0)
                        r = append_s(&c, pick(6) == 0 ? "org.edfd.Nope" : EDFD_BUS_INTERFACE);
                if (r >= 0 && strcmp(rec.member, "GetAll") != 0)
                        r = append_s(&c, prop);
                if (r >= 0 && strcmp(rec.member, "Set") == 0)
                        r = append_value(&c, "v", 1, 0);
                snprintf(sig, sizeof sig, "%s", strcmp(rec.member, "GetAll") == 0 ? "s" : strcmp(rec.member, "Get") == 0 ? "ss" : "ssv");
                goto send;
        } else {
                /* The rest of the object: Introspect, Peer, an unknown member, interface or object. */
                snprintf(rec.want_sig, sizeof rec.want_sig, "?");
                switch (pick(5)) {
                case 0:
                        snprintf(rec.iface, sizeof rec.iface, "org.freedesktop.DBus.Introspectable");
                        snprintf(rec.member, sizeof rec.member, "Introspect");
                        break;
                case 1:
                        snprintf(rec.iface, sizeof rec.iface, "org.freedesktop.DBus.Peer");
                        snprintf(rec.member, sizeof rec.member, "Ping");
                        break;
                case 2:
                        snprintf(rec.member, sizeof rec.member, "%s", PICK(((const char *[]) { "NoSuchMethod", "admit", "Admit2" })));
                        random_signature(sig, 60, 3);
                        break;
                case 3:
                        snprintf(rec.iface, sizeof rec.iface, "org.edfd.Admission1.Nope");
                        snprintf(rec.member, sizeof rec.member, "%s", o->methods[pick(o->n_methods)]);
                        random_signature(sig, 60, 3);
                        break;
                default:
                        path = PICK(((const char *[]) { "/org/edfd/Admission1/x", "/", "/org/edfd" }));
                        snprintf(rec.member, sizeof rec.member, "%s", o->methods[pick(o->n_methods)]);
                        random_signature(sig, 60, 3);
                }
        }

        r = sd_bus_message_new_method_call(ctx.bus, &c.m, EDFD_BUS_NAME, path, rec.iface, rec.member);
        if (r >= 0) {
                int p = strcmp(sig, rec.want_sig) == 0 && pick(2) == 0 ? append_plausible(&c, rec.member, sig) : 0;
                r = p != 0 ? p : append_signature(&c, sig);
        }
send:
        snprintf(rec.sig, sizeof rec.sig, "%s", sig);
        rec.wrong_sig = strcmp(rec.want_sig, "?") != 0 && strcmp(sig, rec.want_sig) != 0;
        rec.invalid_value = c.invalid;
        memcpy(rec.u, c.u, sizeof rec.u);
        rec.n_u = c.n_u;
        snprintf(rec.desc, sizeof rec.desc, "%s", c.desc.buf);
        if (r < 0) {
                rec.built = false;
                rec.built_r = r;
                rec.r = r;
                sd_bus_message_unref(c.m);
                call_finish(&rec, NULL);
                return;
        }
        t0 = mono_usec();
        rec.r = sd_bus_call(ctx.bus, c.m, CALL_TIMEOUT_USEC, &e, &reply);
        rec.usec = mono_usec() - t0;
        sd_bus_message_unref(c.m);
        if (e.name)
                snprintf(rec.name, sizeof rec.name, "%s", e.name);
        if (e.message)
                snprintf(rec.message, sizeof rec.message, "%s", e.message);
        call_finish(&rec, reply);

        /* The signals a subscription brings, if any. */
        while (sd_bus_process(ctx.bus, NULL) > 0)
                ;
        /* If this call made the calling thread SCHED_DEADLINE (its own tid is among the values), give
         * it back at once: a calling thread with 100 us per 100 ms would take the run hours. */
        if (self_deadline()) {
                Record cl = { .kind = REC_CALL, .index = index, .built = true, .cleanup = true };
                sd_bus_error_free(&e);
                snprintf(cl.member, sizeof cl.member, "ReleaseThread");
                snprintf(cl.iface, sizeof cl.iface, "%s", EDFD_BUS_INTERFACE);
                snprintf(cl.sig, sizeof cl.sig, "u");
                snprintf(cl.want_sig, sizeof cl.want_sig, "u");
                snprintf(cl.desc, sizeof cl.desc, "%d (the calling thread itself, after %.180s)", (int) own_tid(), rec.desc);
                cl.r = sd_bus_call_method(ctx.bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "ReleaseThread",
                                          &e, NULL, "u", (uint32_t) own_tid());
                if (e.name)
                        snprintf(cl.name, sizeof cl.name, "%s", e.name);
                if (e.message)
                        snprintf(cl.message, sizeof cl.message, "%s", e.message);
                record_send(&cl, sizeof cl);
                if (self_deadline())
                        nobody_fatal("the calling thread is still SCHED_DEADLINE after ReleaseThread(itself): %s",
                                     e.message ? e.message : strerror(-cl.r));
        }
}

static void *caller_thread(void *arg) {
        Record hello = { .kind = REC_HELLO };

        (void) arg;
        ctx.hello.caller_tid = own_tid();
        record_send(&hello, sizeof hello);
        record_send(&ctx.hello, sizeof ctx.hello);
        for (unsigned i = 0; i < ctx.n_calls; i++)
                nobody_call(i);
        return NULL;
}

_Noreturn static void nobody_main(pid_t parent) {
        Threads extra[2] = {};
        Record end = { .kind = REC_END };
        char byte;
        int r;

        ctx.fd = agent_keep_only_fd(ctx.fd);
        if (agent_drop_to(NOBODY) < 0)
                _exit(2);
        agent_die_with_parent(parent);
        /* Admissions with flag 2 ask for SIGXCPU on an overrun: it must not end the run. */
        signal(SIGXCPU, SIG_IGN);
        rng_state = ctx.seed;
        ctx.devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (ctx.devnull < 0)
                nobody_fatal("open /dev/null: %m");

        ctx.hello.pid = getpid();
        for (unsigned i = 0; i < N_SLEEPERS; i++)
                ctx.hello.sleepers[i] = sleeper_start(&ctx.hello.sleeper_tids[i]);
        for (unsigned i = 0; i < 2; i++) {
                pthread_t t;
                if (pthread_create(&t, NULL, extra_thread, &extra[i]) != 0)
                        nobody_fatal("pthread_create");
                while (__atomic_load_n(&extra[i].tid, __ATOMIC_SEQ_CST) == 0)
                        usleep(100);
                ctx.hello.extra_tids[i] = extra[i].tid;
        }
        r = sd_bus_new(&ctx.bus);
        if (r >= 0)
                r = sd_bus_set_address(ctx.bus, ctx.bus_address);
        if (r >= 0)
                r = sd_bus_set_bus_client(ctx.bus, 1);
        if (r >= 0)
                r = sd_bus_negotiate_fds(ctx.bus, 1);
        if (r >= 0)
                r = sd_bus_start(ctx.bus);
        if (r < 0)
                nobody_fatal("nobody cannot connect to the bus: %s", strerror(-r));
        introspect();
        /* The calls come from a thread of their own: the main thread (pid 0 with tid 0 in Admit) just
         * waits, as a real program's might, and may well be admitted. */
        {
                pthread_t t;
                if (pthread_create(&t, NULL, caller_thread, NULL) != 0 || pthread_join(t, NULL) != 0)
                        nobody_fatal("the calling thread");
        }
        record_send(&end, sizeof end);

        /* Hold everything while the test looks; go when it says so (or is gone). */
        (void) recv(ctx.fd, &byte, 1, 0);
        for (unsigned i = 0; i < N_SLEEPERS; i++) {
                kill(ctx.hello.sleepers[i], SIGKILL);
                (void) waitpid(ctx.hello.sleepers[i], NULL, 0);
        }
        _exit(0);
}

/* ---- the test's side ---- */

/* Sum of what every thread of pid has run, in ns (/proc/PID/task/ * /schedstat); 0 if unreadable. */
static uint64_t cpu_ns(pid_t pid) {
        char path[64];
        uint64_t sum = 0;
        struct dirent *de;
        DIR *d;

        snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                char p[320];
                unsigned long long v;
                FILE *f;
                if (de->d_name[0] == '.')
                        continue;
                snprintf(p, sizeof p, "/proc/%d/task/%s/schedstat", (int) pid, de->d_name);
                f = fopen(p, "re");
                if (f && fscanf(f, "%llu", &v) == 1)
                        sum += v;
                if (f)
                        fclose(f);
        }
        closedir(d);
        return sum;
}

/* Field 22 of /proc/PID/stat: when the process started, in clock ticks since boot. */
static unsigned long long start_time(pid_t pid) {
        char path[64], buf[1024], *p;
        unsigned long long v = 0;
        ssize_t n;
        int fd;

        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        p = strrchr(buf, ')');
        if (!p)
                return 0;
        /* after ") " come fields 3 (state) ... 22 */
        p += 2;
        for (int field = 3; field < 22 && p; field++) {
                p = strchr(p, ' ');
                if (p)
                        p++;
        }
        if (p)
                v = strtoull(p, NULL, 10);
        return v;
}

/* A kernel thread (a child of kthreadd), or 2. */
static pid_t some_kernel_thread(void) {
        DIR *d = opendir("/proc");
        struct dirent *de;
        pid_t found = 2;

        while (d && found == 2 && (de = readdir(d))) {
                pid_t pid = (pid_t) atoi(de->d_name);
                ProcStat st;
                if (pid > 2 && proc_read_stat(pid, pid, PROC_STAT_PPID, &st) >= 0 && st.ppid == 2)
                        found = pid;
        }
        if (d)
                closedir(d);
        return found;
}

static bool is_nobodys(const Hello *o, uint32_t pid) {
        if (pid == (uint32_t) o->pid)
                return true;
        for (unsigned i = 0; i < N_SLEEPERS; i++)
                if (pid == (uint32_t) o->sleepers[i])
                        return true;
        return false;
}

static bool is_nobodys_thread(const Hello *o, uint32_t tid) {
        if (is_nobodys(o, tid) || tid == (uint32_t) o->caller_tid || tid == (uint32_t) o->extra_tids[0] ||
            tid == (uint32_t) o->extra_tids[1])
                return true;
        for (unsigned i = 0; i < N_SLEEPERS; i++)
                if (tid == (uint32_t) o->sleeper_tids[i])
                        return true;
        return false;
}

/* A reply edfd or the bus gave that says edfd did not answer. */
static bool no_answer(const char *name) {
        static const char *const names[] = { "NoReply", "ServiceUnknown", "NameHasNoOwner", "Disconnected", "Timeout",
                                             "TimedOut", "NoServer" };

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                char full[96];
                snprintf(full, sizeof full, "org.freedesktop.DBus.Error.%s", names[i]);
                if (streq(name, full))
                        return true;
        }
        return false;
}

typedef struct Tally {
        unsigned calls, sent, ok, refused, unbuilt, wrong_sig, cleanups;
        unsigned n_names;
        char names[48][128];
        unsigned name_counts[48];
        unsigned method_calls[MAX_METHODS], method_ok[MAX_METHODS];
        uint64_t method_max_usec[MAX_METHODS];
} Tally;

static void tally_name(Tally *t, const char *name) {
        for (unsigned i = 0; i < t->n_names; i++)
                if (streq(t->names[i], name)) {
                        t->name_counts[i]++;
                        return;
                }
        if (t->n_names < ELEMENTSOF(t->names)) {
                snprintf(t->names[t->n_names], sizeof t->names[0], "%s", name);
                t->name_counts[t->n_names++] = 1;
        }
}

static bool is_manage_method(const char *member) {
        return streq(member, "CreateGroup") || streq(member, "SetGroup") || streq(member, "RemoveGroup") ||
               streq(member, "Reload");
}

/* Every check a single reply gets. */
static void check_record(const Hello *o, const Record *rec, Tally *t, uint64_t seed) {
        bool manager = streq(rec->iface, EDFD_BUS_INTERFACE) && !streq(rec->want_sig, "?");
        const char *who = rec->cleanup ? "nobody (the test's clean-up)" : "nobody";

        if (rec->cleanup)
                t->cleanups++;
        else
                t->calls++;
        if (!rec->built) {
                /* sd-bus refuses what D-Bus does not allow: only that, never a well-formed call. */
                cr_assert(rec->invalid_value, "seed %" PRIu64 ", call %u: sd-bus would not build %s.%s(%s) [%s]: %s",
                          seed, rec->index, rec->iface, rec->member, rec->sig, rec->desc, strerror(-rec->built_r));
                t->unbuilt++;
                return;
        }
        t->sent++;
        if (manager)
                for (unsigned k = 0; k < o->n_methods; k++)
                        if (streq(o->methods[k], rec->member)) {
                                t->method_calls[k]++;
                                t->method_ok[k] += rec->r >= 0;
                                t->method_max_usec[k] = MAX(t->method_max_usec[k], rec->usec);
                        }
        if (rec->r >= 0) {
                t->ok++;
                cr_assert(!rec->wrong_sig, "seed %" PRIu64 ", call %u: %s: %s(%s) succeeded with the wrong signature "
                          "(the method's is %s) [%s]", seed, rec->index, who, rec->member, rec->sig, rec->want_sig,
                          rec->desc);
                if (manager && is_manage_method(rec->member))
                        cr_assert_fail("seed %" PRIu64 ", call %u: %s: %s SUCCEEDED without root or polkit [%s]", seed,
                                       rec->index, who, rec->member, rec->desc);
                if (manager && (streq(rec->member, "Admit") || streq(rec->member, "AdmitSplit") ||
                                streq(rec->member, "AdmitAtStart"))) {
                        cr_assert(rec->n_u >= 1 && (rec->u[0] == 0 || is_nobodys(o, rec->u[0])),
                                  "seed %" PRIu64 ", call %u: %s: %s of process %" PRIu32 ", which is not its own, "
                                  "SUCCEEDED [%s]", seed, rec->index, who, rec->member, rec->u[0], rec->desc);
                        for (unsigned i = 1; i < rec->n_u && !streq(rec->member, "AdmitAtStart"); i++)
                                cr_assert(rec->u[i] == 0 || is_nobodys_thread(o, rec->u[i]),
                                          "seed %" PRIu64 ", call %u: %s: %s of thread %" PRIu32 ", which is not its "
                                          "own, SUCCEEDED [%s]", seed, rec->index, who, rec->member, rec->u[i], rec->desc);
                }
                return;
        }
        t->refused++;
        cr_assert(rec->name[0], "seed %" PRIu64 ", call %u: %s: %s.%s(%s) failed without an error reply: %s [%s]", seed,
                  rec->index, who, rec->iface, rec->member, rec->sig, strerror(-rec->r), rec->desc);
        tally_name(t, rec->name);
        cr_assert(!no_answer(rec->name), "seed %" PRIu64 ", call %u: %s: %s.%s(%s): edfd did not answer: %s: %s [%s]",
                  seed, rec->index, who, rec->iface, rec->member, rec->sig, rec->name, rec->message, rec->desc);
        cr_assert(!streq(rec->name, "org.freedesktop.DBus.Error.Failed"),
                  "seed %" PRIu64 ", call %u: %s: %s.%s(%s): a generic failure: %s: %s [%s]", seed, rec->index, who,
                  rec->iface, rec->member, rec->sig, rec->name, rec->message, rec->desc);
        if (strncmp(rec->name, EDFD_ERROR_PREFIX, strlen(EDFD_ERROR_PREFIX)) == 0) {
                cr_assert(rec->name[strlen(EDFD_ERROR_PREFIX)], "seed %" PRIu64 ", call %u: an error named %s", seed,
                          rec->index, rec->name);
                cr_assert(rec->message[0], "seed %" PRIu64 ", call %u: %s(%s): %s without a message [%s]", seed,
                          rec->index, rec->member, rec->sig, rec->name, rec->desc);
        } else
                cr_assert(strncmp(rec->name, "org.freedesktop.DBus.Error.", strlen("org.freedesktop.DBus.Error.")) == 0,
                          "seed %" PRIu64 ", call %u: %s: %s.%s(%s) got %s: %s, neither edfd's error nor a standard "
                          "one [%s]", seed, rec->index, who, rec->iface, rec->member, rec->sig, rec->name, rec->message,
                          rec->desc);
        if (rec->wrong_sig) {
                t->wrong_sig++;
                cr_assert(streq(rec->name, "org.freedesktop.DBus.Error.InvalidArgs"),
                          "seed %" PRIu64 ", call %u: %s(%s), whose signature is %s, got %s: %s, expected InvalidArgs "
                          "[%s]", seed, rec->index, rec->member, rec->sig, rec->want_sig, rec->name, rec->message,
                          rec->desc);
        }
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static uint64_t root_echo_usec(Harness *h, const char *when) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        uint64_t v = 0, t0 = mono_usec();
        int r;

        r = harness_call(h, &e, &reply, "Echo", "t", UINT64_C(0x5eed));
        cr_assert(r >= 0 && sd_bus_message_read(reply, "t", &v) >= 0 && v == 0x5eed, "root's Echo %s: %s", when,
                  e.message ? e.message : strerror(-r));
        return mono_usec() - t0;
}

static uint32_t get_u32(Harness *h, const char *property) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        uint32_t v = 0;
        int r;

        r = sd_bus_get_property_trivial(h->bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, property, &e, 'u', &v);
        cr_assert_geq(r, 0, "property %s: %s", property, e.message);
        return v;
}

/* The books balance, the kernel agrees with each reservation, and nobody is within its limits. */
static void check_books(Harness *h, const Hello *o, const HarnessChild *root_child, uint64_t seed) {
        HarnessReservation *l = NULL;
        HarnessGroup *g = NULL;
        size_t n = 0, ng = 0;
        uint64_t unmanaged = 0, nobody_bw = 0, nobody_n = 0;
        uint32_t waiting;

        for (unsigned attempt = 0;; attempt++) {
                bool balanced = true;
                char why[512] = "";
                cr_assert_eq(harness_list_reservations(h, &l, &n), 0);
                cr_assert_eq(harness_list_groups(h, &g, &ng), 0);
                cr_assert_eq(harness_get_u64(h, "Unmanaged", &unmanaged), 0);
                for (size_t i = 0; i < ng && balanced; i++) {
                        uint64_t sum = (streq(g[i].path, "/") ? unmanaged : 0) + g[i].held;
                        size_t plen = strlen(g[i].path);
                        for (size_t j = 0; j < ng; j++) {
                                const char *p = g[j].path, *slash = strrchr(p, '/');
                                bool child = streq(g[i].path, "/") ? (j != i && !strchr(p, '/'))
                                                                     : (slash && (size_t) (slash - p) == plen &&
                                                                        strncmp(p, g[i].path, plen) == 0);
                                if (child)
                                        sum += g[j].bandwidth;
                        }
                        for (size_t j = 0; j < n; j++)
                                if (streq(l[j].group, g[i].path))
                                        sum += l[j].bandwidth;
                        if (sum != g[i].allocated) {
                                balanced = false;
                                snprintf(why, sizeof why,
                                         "group %s: allocated %" PRIu64 ", but its children, reservations and "
                                         "waiting admissions hold %" PRIu64 " (unmanaged %" PRIu64 ", held %" PRIu64 ")",
                                         g[i].path, g[i].allocated, sum, unmanaged, g[i].held);
                        }
                        cr_assert(g[i].allocated <= g[i].bandwidth || streq(g[i].path, "/"),
                                  "seed %" PRIu64 ": group %s holds %" PRIu64 " of %" PRIu64, seed, g[i].path,
                                  g[i].allocated, g[i].bandwidth);
                }
                if (balanced || attempt > 0) {
                        cr_assert(balanced, "seed %" PRIu64 ": the books do not balance: %s", seed, why);
                        break;
                }
                /* Unmanaged may have been measured again between the calls: look once more. */
                harness_reservations_free(l, n);
                harness_groups_free(g, ng);
        }
        for (size_t j = 0; j < n; j++) {
                const HarnessReservation *x = &l[j];
                SchedAttr a;
                cr_assert(is_nobodys(o, x->pid) && is_nobodys_thread(o, x->tid),
                          "seed %" PRIu64 ": reservation %" PRIu64 " is of pid %" PRIu32 " tid %" PRIu32
                          ", not of nobody's processes", seed, x->id, x->pid, x->tid);
                cr_assert_eq(x->uid, (uint32_t) NOBODY, "seed %" PRIu64 ": reservation %" PRIu64 " is charged to uid %" PRIu32,
                             seed, x->id, x->uid);
                nobody_bw += x->bandwidth;
                nobody_n++;
                cr_assert_eq(harness_sched_getattr((pid_t) x->tid, &a), 0);
                cr_assert(a.sched_policy == SCHED_DEADLINE && a.sched_runtime == x->runtime &&
                                  a.sched_deadline == x->deadline && a.sched_period == x->period,
                          "seed %" PRIu64 ": thread %" PRIu32 " has policy %" PRIu32 " %" PRIu64 "/%" PRIu64 "/%" PRIu64
                          ", the books say %" PRIu64 "/%" PRIu64 "/%" PRIu64,
                          seed, x->tid, a.sched_policy, a.sched_runtime, a.sched_deadline, a.sched_period, x->runtime,
                          x->deadline, x->period);
        }
        cr_assert_leq(nobody_n, LIMIT_RESERVATIONS, "seed %" PRIu64 ": nobody holds %" PRIu64 " reservations, its limit "
                      "is %d", seed, nobody_n, LIMIT_RESERVATIONS);
        cr_assert_leq(nobody_bw, BW_UNIT * LIMIT_BW_PERCENT / 100 + 1, "seed %" PRIu64 ": nobody holds bandwidth %" PRIu64
                      ", its limit is %d%%", seed, nobody_bw, LIMIT_BW_PERCENT);
        waiting = get_u32(h, "WaitingAtStart");
        cr_assert_leq(waiting, LIMIT_RESERVATIONS, "seed %" PRIu64 ": %" PRIu32 " of nobody's processes wait to be "
                      "admitted at their start (AdmitAtStart) beside its %" PRIu64 " reservations, its limit is %d",
                      seed, waiting, nobody_n, LIMIT_RESERVATIONS);
        for (unsigned t = 0; t < root_child->n_threads; t++)
                harness_assert_other(root_child->tids[t]);
        fprintf(stderr, "hostile_random: afterwards nobody holds %" PRIu64 " reservations (%.2f%% of a CPU), %" PRIu32
                " watches\n", nobody_n, (double) nobody_bw * 100.0 / (double) BW_UNIT, waiting);
        harness_reservations_free(l, n);
        harness_groups_free(g, ng);
}

/* edfd's log: no sanitizer report, and no failed consistency check (edfd runs tree_check() at every
 * resync and logs "Books inconsistent after resync"). */
static void check_log(Harness *h, uint64_t seed) {
        FILE *fp = fopen(h->log_path, "re");
        char *line = NULL;
        size_t cap = 0;

        cr_assert(fp, "cannot read edfd's log %s: %m", h->log_path);
        while (getline(&line, &cap, fp) >= 0) {
                cr_assert(!strstr(line, "inconsistent"), "seed %" PRIu64 ": edfd's consistency check failed: %s", seed,
                          line);
                cr_assert(!strstr(line, "runtime error:") && !strstr(line, "Sanitizer"),
                          "seed %" PRIu64 ": edfd's log has a sanitizer report: %s", seed, line);
        }
        free(line);
        fclose(fp);
}

Test(hostile_random, nobody_calls_every_method) {
        const char *seed_env = getenv("EDFD_HOSTILE_SEED"), *calls_env = getenv("EDFD_HOSTILE_CALLS");
        Harness *h = NULL;
        HarnessChild *root_child;
        Hello hello = {};
        Tally *t = calloc(1, sizeof *t);
        uint64_t *echo = NULL, seed, t0, t1, cpu0, cpu1, last_echo, resyncs0, resyncs1, end;
        size_t n_echo = 0, echo_cap = 0;
        unsigned ready0 = 0, ready1 = 0;
        unsigned long long started;
        pid_t edfd_pid, child;
        bool done = false;
        int sv[2], status, r;
        Record rec;

        cr_assert(t);
        harness_require();
        r = harness_start(&h, config_yaml, NULL);
        cr_assert_eq(r, 0, "edfd did not start: %s", strerror(-r));
        cr_assert_eq(harness_spawn_child(h, 2, false, &root_child), 0);

        seed = seed_env ? strtoull(seed_env, NULL, 0) : mono_usec() ^ ((uint64_t) getpid() << 32);
        fprintf(stderr, "hostile_random: seed %" PRIu64 " (EDFD_HOSTILE_SEED=%" PRIu64 " repeats this run)\n", seed, seed);
        ctx = (Ctx) { .bus_address = h->bus_address, .seed = seed,
                      .n_calls = calls_env ? (unsigned) strtoul(calls_env, NULL, 0) : 10000, .test_pid = getpid(),
                      .root_child = root_child->pid, .root_child_tid2 = root_child->tids[1], .edfd = h->edfd_pid,
                      .dbus = h->dbus_pid, .kthread = some_kernel_thread(), .dead = harness_dead_pid() };
        edfd_pid = h->edfd_pid;
        started = start_time(edfd_pid);
        harness_notify_counts(h, &ready0, NULL);
        cr_assert_gt(started, 0u);

        cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        ctx.fd = sv[1];
        child = fork();
        cr_assert_geq(child, 0);
        if (child == 0) {
                close(sv[0]);
                nobody_main(ctx.test_pid);
        }
        close(sv[1]);

        /* Hello: who nobody is, and what it found to call. */
        cr_assert_eq(recv(sv[0], &rec, sizeof rec, 0), (ssize_t) sizeof rec, "nobody's process died before it connected");
        cr_assert(rec.kind != REC_FATAL, "nobody's process: %s", rec.message);
        cr_assert_eq(rec.kind, REC_HELLO);
        cr_assert_eq(recv(sv[0], &hello, sizeof hello, 0), (ssize_t) sizeof hello);
        {
                static const char *const documented[] = { "Admit", "AdmitSplit", "AdmitAtStart", "Update", "Release",
                                                          "ReleaseThread", "ReleaseProcess", "ListReservations",
                                                          "ListGroups", "ListPartitions", "Plan", "CreateGroup",
                                                          "SetGroup", "RemoveGroup", "Reload", "Subscribe",
                                                          "Unsubscribe", "Echo" };
                fprintf(stderr, "hostile_random: %u methods and %u properties introspected:", hello.n_methods, hello.n_props);
                for (unsigned k = 0; k < hello.n_methods; k++)
                        fprintf(stderr, " %s(%s)", hello.methods[k], hello.method_sigs[k]);
                fprintf(stderr, "\n");
                /* The introspection was read right: everything docs/org.edfd.Admission1.xml lists is there
                 * (a method added since is called too, from its own signature). */
                for (size_t i = 0; i < ELEMENTSOF(documented); i++) {
                        bool found = false;
                        for (unsigned k = 0; k < hello.n_methods; k++)
                                found = found || streq(hello.methods[k], documented[i]);
                        cr_assert(found, "edfd's introspection, as read, has no method %s", documented[i]);
                }
                cr_assert_geq(hello.n_props, 10u);
        }

        t0 = mono_usec();
        cpu0 = cpu_ns(edfd_pid);
        last_echo = t0;
        while (!done) {
                struct pollfd p = { .fd = sv[0], .events = POLLIN };
                uint64_t now;

                r = poll(&p, 1, ECHO_EVERY_USEC / 1000);
                cr_assert_geq(r, 0, "poll: %m");
                if (r > 0) {
                        ssize_t k = recv(sv[0], &rec, sizeof rec, 0);
                        cr_assert_eq(k, (ssize_t) sizeof rec, "seed %" PRIu64 ": nobody's process died after %u calls",
                                     seed, t->calls);
                        cr_assert(rec.kind != REC_FATAL, "nobody's process: %s", rec.message);
                        if (rec.kind == REC_END)
                                done = true;
                        else
                                check_record(&hello, &rec, t, seed);
                }
                now = mono_usec();
                if (now - last_echo >= ECHO_EVERY_USEC || done) {
                        cr_assert_eq(waitpid(edfd_pid, &status, WNOHANG), 0, "seed %" PRIu64 ": edfd died after %u calls "
                                     "(the last: %s(%s) [%s])", seed, t->calls, rec.member, rec.sig, rec.desc);
                        if (n_echo == echo_cap) {
                                echo_cap = echo_cap ? 2 * echo_cap : 1024;
                                echo = reallocarray(echo, echo_cap, sizeof *echo);
                                cr_assert(echo);
                        }
                        echo[n_echo++] = root_echo_usec(h, "during nobody's calls");
                        last_echo = mono_usec();
                }
        }
        t1 = mono_usec();
        cpu1 = cpu_ns(edfd_pid);

        qsort(echo, n_echo, sizeof *echo, cmp_u64);
        fprintf(stderr,
                "hostile_random: %u calls by nobody (%u sent, %u refused by sd-bus: invalid UTF-8, object paths or "
                "signatures) in %.1f s: %u succeeded, %u refused (%u for a wrong signature); %u clean-up releases of "
                "the calling thread\n",
                t->calls, t->sent, t->unbuilt, (double) (t1 - t0) / 1e6, t->ok, t->refused, t->wrong_sig, t->cleanups);
        fprintf(stderr, "hostile_random: edfd's CPU %.1f%% of one CPU meanwhile; root's Echo every %d ms (%zu calls): "
                "p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
                (double) (cpu1 - cpu0) / 10.0 / (double) (t1 - t0), ECHO_EVERY_USEC / 1000, n_echo,
                (double) echo[n_echo / 2] / 1e3, (double) echo[n_echo * 99 / 100] / 1e3, (double) echo[n_echo - 1] / 1e3);
        for (unsigned k = 0; k < hello.n_methods; k++)
                fprintf(stderr, "  %-18s %5u calls, %5u succeeded, slowest %.1f ms\n", hello.methods[k],
                        t->method_calls[k], t->method_ok[k], (double) t->method_max_usec[k] / 1e3);
        for (unsigned i = 0; i < t->n_names; i++)
                fprintf(stderr, "  %6u  %s\n", t->name_counts[i], t->names[i]);

        cr_assert_eq(t->calls, ctx.n_calls);
        /* Every method was really called (sent, not refused by sd-bus), and the run admitted something. */
        for (unsigned k = 0; k < hello.n_methods; k++)
                cr_assert(t->method_calls[k] > 0 || ctx.n_calls < 20 * hello.n_methods,
                          "seed %" PRIu64 ": %s was never called", seed, hello.methods[k]);
        for (unsigned k = 0; k < hello.n_methods && ctx.n_calls >= 5000; k++)
                if (streq(hello.methods[k], "Admit"))
                        cr_assert_gt(t->method_ok[k], 0u, "seed %" PRIu64 ": no Admit by nobody succeeded: the run "
                                     "tested only refusals", seed);

        /* The same edfd, never restarted, still answers; everything balances. */
        cr_assert_eq(waitpid(edfd_pid, &status, WNOHANG), 0, "seed %" PRIu64 ": edfd died", seed);
        cr_assert_eq(h->edfd_pid, edfd_pid);
        cr_assert_eq(start_time(edfd_pid), started, "seed %" PRIu64 ": pid %d is another process now", seed, (int) edfd_pid);
        harness_notify_counts(h, &ready1, NULL);
        cr_assert_eq(ready1, ready0, "seed %" PRIu64 ": edfd said READY=1 again: it started again", seed);
        (void) root_echo_usec(h, "after nobody's calls");
        check_books(h, &hello, root_child, seed);

        /* edfd's own consistency check runs at its next resync (at most 10 s away). */
        cr_assert_eq(harness_get_u64(h, "Resyncs", &resyncs0), 0);
        end = mono_usec() + 15 * UINT64_C(1000000);
        do {
                harness_usleep(100 * 1000);
                cr_assert_eq(harness_get_u64(h, "Resyncs", &resyncs1), 0);
        } while (resyncs1 == resyncs0 && mono_usec() < end);
        cr_assert_gt(resyncs1, resyncs0, "no resync within 15 s");
        check_log(h, seed);
        check_books(h, &hello, root_child, seed);

        /* nobody's processes exit: what they held and the watches on them go. */
        (void) send(sv[0], "x", 1, MSG_NOSIGNAL);
        cr_assert_eq(waitpid(child, &status, 0), child);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "nobody's process ended with status 0x%x", status);
        close(sv[0]);
        end = mono_usec() + 5 * UINT64_C(1000000);
        for (;;) {
                uint32_t waiting = get_u32(h, "WaitingAtStart");
                if ((get_u32(h, "Reservations") == 0 && waiting == 0) || mono_usec() > end)
                        break;
                harness_usleep(20 * 1000);
        }
        harness_assert_no_reservations(h, "after nobody's processes exited");
        cr_assert_eq(get_u32(h, "WaitingAtStart"), 0u, "seed %" PRIu64 ": watches on exited processes stay", seed);
        (void) root_echo_usec(h, "at the end");
        check_log(h, seed);
        free(echo);
        free(t);
        harness_stop(h);
}

/* The smallest form of what the random run found: nobody, whose limit is 4 reservations, asks to be
 * admitted at the start of 5 of its processes (none of which ever execs). A watch is an admission
 * waiting to happen: the 5th must be refused as over nobody's limit, and no more than 4 may wait. */
Test(hostile_random, watches_held_to_the_callers_limit) {
        Harness *h = NULL;
        pid_t sleepers[LIMIT_RESERVATIONS + 1];
        unsigned admitted = 0;
        uint32_t waiting;
        uint64_t end;
        Agent *a;
        int r;

        harness_require();
        r = harness_start(&h, config_yaml, NULL);
        cr_assert_eq(r, 0, "edfd did not start: %s", strerror(-r));
        a = agent_start(h);
        for (size_t i = 0; i < ELEMENTSOF(sleepers); i++)
                sleepers[i] = harness_nobody_sleeper();
        for (size_t i = 0; i < ELEMENTSOF(sleepers); i++) {
                AgentReply rep = agent_call(a, "AdmitAtStart", "usttttt", (uint64_t) sleepers[i], "open", 100 * US,
                                            UINT64_C(0), P100, UINT64_C(0), 1000 * MS);
                if (rep.r >= 0) {
                        admitted++;
                        continue;
                }
                cr_assert(streq(rep.name, EDFD_ERROR_LIMIT_EXCEEDED) && rep.message[0],
                          "nobody: AdmitAtStart(process %zu of %zu): %s: %s, expected LimitExceeded", i + 1,
                          ELEMENTSOF(sleepers), rep.name, rep.message);
        }
        waiting = get_u32(h, "WaitingAtStart");
        cr_assert_leq(admitted, LIMIT_RESERVATIONS, "nobody, whose limit is %d reservations, had %u admissions at "
                      "start accepted", LIMIT_RESERVATIONS, admitted);
        cr_assert_leq(waiting, LIMIT_RESERVATIONS, "%" PRIu32 " of nobody's processes wait to be admitted at their "
                      "start; its limit is %d reservations", waiting, LIMIT_RESERVATIONS);
        for (size_t i = 0; i < ELEMENTSOF(sleepers); i++) {
                kill(sleepers[i], SIGKILL);
                (void) waitpid(sleepers[i], NULL, 0);
        }
        end = mono_usec() + 5 * UINT64_C(1000000);
        while (get_u32(h, "WaitingAtStart") > 0 && mono_usec() < end)
                harness_usleep(20 * 1000);
        cr_assert_eq(get_u32(h, "WaitingAtStart"), 0u, "watches on exited processes stay");
        harness_assert_no_reservations(h, "after nobody's processes exited");
        agent_stop(a);
        harness_stop(h);
}

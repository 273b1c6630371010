/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The files in units/: the service is hardened to a `systemd-analyze security` exposure of at most
 * 2.0 and passes `systemd-analyze verify`; the D-Bus activation file names the service by its alias;
 * the D-Bus policy parses and does what it says on a real dbus-daemon (only root may own
 * org.edfd.Admission1, anyone may call the manager, nothing else is opened); the polkit policy is
 * valid against polkit's DTD.
 *
 * Environment (set by meson): EDFD_UNITS_SRC (the source units/ directory), EDFD_UNITS_BUILD (the
 * built units/ directory, with edfd.service), EDFD_BINARY (the built daemon, for verify's ExecStart
 * check). */

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <systemd/sd-bus.h>

#define EXPOSURE_MAX 20 /* tenths: 2.0 */
#define NOBODY 65534
#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#define BUS_NAME "org.edfd.Admission1"
#define BUS_PATH "/org/edfd/Admission1"
#define BUS_INTERFACE "org.edfd.Admission1.Manager"

extern char **environ;

static inline bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

static void remove_test_dir(void);

TestSuite(units, .fini = remove_test_dir, .timeout = 60);

/* ---- small helpers ---- */

static char *read_file(const char *path) {
        FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t n = 0, size = 0;

        if (!f)
                return NULL;
        for (;;) {
                if (size - n < 4096) {
                        char *nb = realloc(buf, size += 65536);
                        if (!nb) {
                                free(buf);
                                fclose(f);
                                return NULL;
                        }
                        buf = nb;
                }
                size_t k = fread(buf + n, 1, size - n - 1, f);
                if (k == 0)
                        break;
                n += k;
        }
        fclose(f);
        buf[n] = '\0';
        return buf;
}

static void write_file(const char *path, const char *text) {
        FILE *f = fopen(path, "we");

        cr_assert(f, "cannot write %s: %s", path, strerror(errno));
        cr_assert_eq(fputs(text, f) >= 0 && fclose(f) == 0, true, "writing %s failed", path);
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...) {
        va_list ap;
        char *s = NULL;

        va_start(ap, fmt);
        cr_assert_geq(vasprintf(&s, fmt, ap), 0);
        va_end(ap);
        return s;
}

/* Replace every occurrence of from in text by to; newly allocated. */
static char *replace_all(const char *text, const char *from, const char *to) {
        size_t n = 0, lf = strlen(from), lt = strlen(to);
        char *out, *o;

        for (const char *p = strstr(text, from); p; p = strstr(p + lf, from))
                n++;
        out = malloc(strlen(text) + n * (lt > lf ? lt - lf : 0) + 1);
        cr_assert(out);
        o = out;
        for (const char *p = text;;) {
                const char *q = strstr(p, from);
                if (!q) {
                        strcpy(o, p);
                        break;
                }
                memcpy(o, p, (size_t) (q - p));
                o += q - p;
                memcpy(o, to, lt);
                o += lt;
                p = q + lf;
        }
        return out;
}

static const char *env_or_skip(const char *name) {
        const char *v = getenv(name);

        if (!v || !*v)
                cr_skip_test("%s is not set (run through meson test)", name);
        return v;
}

static char *find_program(const char *name) {
        const char *path = getenv("PATH");
        char *copy = strdup(path ? path : "/usr/bin:/bin"), *save = NULL;

        cr_assert(copy);
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                char *p = xasprintf("%s/%s", d, name);
                if (access(p, X_OK) == 0) {
                        free(copy);
                        return p;
                }
                free(p);
        }
        free(copy);
        return NULL;
}

/* Run argv, collecting stdout and stderr together into *ret_output. Returns the exit status, or -1
 * if it did not exit normally. */
static int run(char *const argv[], char **ret_output) {
        char tmpl[] = "/tmp/edfd-units-out-XXXXXX";
        posix_spawn_file_actions_t fa;
        int fd = mkostemp(tmpl, O_CLOEXEC), status;
        pid_t pid;

        cr_assert_geq(fd, 0);
        unlink(tmpl);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, fd, STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&fa, fd, STDERR_FILENO);
        cr_assert_eq(posix_spawn(&pid, argv[0], &fa, NULL, argv, environ), 0, "cannot run %s", argv[0]);
        posix_spawn_file_actions_destroy(&fa);
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        if (ret_output) {
                off_t len = lseek(fd, 0, SEEK_END);
                char *buf = calloc(1, (size_t) len + 1);
                cr_assert(buf);
                cr_assert_eq(pread(fd, buf, (size_t) len, 0), (ssize_t) len);
                *ret_output = buf;
        }
        close(fd);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char test_dir[PATH_MAX];

static const char *make_test_dir(void) {
        snprintf(test_dir, sizeof test_dir, "/tmp/edfd-units-%d-XXXXXX", (int) getpid());
        cr_assert(mkdtemp(test_dir), "mkdtemp: %s", strerror(errno));
        cr_assert_eq(chmod(test_dir, 0755), 0);
        return test_dir;
}

static void remove_test_dir(void) {
        char *cmd;

        if (!test_dir[0])
                return;
        cmd = xasprintf("rm -rf '%s'", test_dir);
        (void) system(cmd);
        free(cmd);
        test_dir[0] = '\0';
}

/* The unit to check, as installed: build/units/edfd.service, or the source template with @sbindir@
 * replaced. With exec (for verify), ExecStart= names the built daemon, which exists. Written to
 * DIR/edfd.service; returns that path. */
static char *unit_file(const char *dir, bool exec) {
        const char *build = getenv("EDFD_UNITS_BUILD"), *src = env_or_skip("EDFD_UNITS_SRC");
        char *path = build ? xasprintf("%s/edfd.service", build) : NULL, *text = NULL, *out;

        if (path)
                text = read_file(path);
        free(path);
        if (!text) {
                char *in = xasprintf("%s/edfd.service.in", src), *raw = read_file(in);
                cr_assert(raw, "cannot read %s", in);
                text = replace_all(raw, "@sbindir@", "/usr/sbin");
                free(raw);
                free(in);
        }
        if (exec) {
                const char *binary = env_or_skip("EDFD_BINARY");
                char *line = strstr(text, "\nExecStart=");
                cr_assert(line, "the unit has no ExecStart=");
                char *eol = strchr(line + 1, '\n');
                char *fixed = xasprintf("%.*s\nExecStart=%s%s", (int) (line - text), text, binary, eol ? eol : "");
                free(text);
                text = fixed;
        }
        out = xasprintf("%s/edfd.service", dir);
        write_file(out, text);
        free(text);
        return out;
}

/* ---- systemd-analyze security ---- */

typedef struct Item {
        char line[512];
        double exposure;
} Item;

static int item_cmp(const void *a, const void *b) {
        const Item *x = a, *y = b;

        return x->exposure < y->exposure ? 1 : x->exposure > y->exposure ? -1 : 0;
}

Test(units, security_exposure) {
        char *analyze = find_program("systemd-analyze"), *unit, *out = NULL;
        const char *at;
        unsigned whole = 0, tenth = 0;
        Item items[200];
        size_t n = 0;
        int status;

        if (!analyze)
                cr_skip_test("systemd-analyze is not installed");
        unit = unit_file(make_test_dir(), false);
        char *argv[] = { analyze, (char *) "security", (char *) "--offline=true", (char *) "--no-pager", unit, NULL };
        status = run(argv, &out);
        at = strstr(out, "Overall exposure level for edfd.service:");
        if (!at && (strstr(out, "Unknown option") || strstr(out, "unrecognized option")))
                cr_skip_test("this systemd-analyze has no --offline: %s", out);
        cr_assert(at, "systemd-analyze security printed no overall exposure (status %d):\n%s", status, out);
        cr_assert_eq(sscanf(at, "Overall exposure level for edfd.service: %u.%u", &whole, &tenth), 2,
                     "cannot read the exposure in: %.80s", at);

        /* The items that cost something, worst first. */
        for (char *line = strtok(out, "\n"); line && n < ELEMENTSOF(items); line = strtok(NULL, "\n")) {
                char *last;
                if (!strstr(line, "\xe2\x9c\x97")) /* ✗ */
                        continue;
                last = strrchr(line, ' ');
                snprintf(items[n].line, sizeof items[n].line, "%s", line);
                items[n].exposure = last ? strtod(last + 1, NULL) : 0;
                n++;
        }
        qsort(items, n, sizeof items[0], item_cmp);
        fprintf(stderr, "systemd-analyze security --offline=true %s: exposure %u.%u (at most 2.0 allowed)\n", unit,
                whole, tenth);
        for (size_t i = 0; i < n && i < 8; i++)
                fprintf(stderr, "  %s\n", items[i].line);
        cr_assert_leq(whole * 10 + tenth, EXPOSURE_MAX,
                      "edfd.service has an exposure of %u.%u, above 2.0; the worst items are printed above", whole,
                      tenth);
        free(out);
        free(unit);
        free(analyze);
        remove_test_dir();
}

/* Everything issue 8 asks of the unit, by key, and what it must not have. */
Test(units, hardening_keys) {
        char *unit = unit_file(make_test_dir(), false), *text = read_file(unit);
        static const char *const required[] = {
                "Type=notify", "BusName=org.edfd.Admission1", "ExecReload=", "Restart=on-failure", "WatchdogSec=",
                "RuntimeDirectory=edfd", "RuntimeDirectoryPreserve=yes", "NoNewPrivileges=yes",
                "ProtectSystem=strict", "ReadWritePaths=", "PrivateTmp=yes", "ProtectHome=yes",
                "RestrictAddressFamilies=AF_UNIX AF_NETLINK", "SystemCallFilter=@system-service",
                "MemoryDenyWriteExecute=yes", "CapabilityBoundingSet=",
        };
        static const char *const forbidden[] = { "RestrictRealtime=yes", "PrivateNetwork=yes", "ProtectProc=invisible",
                                                 "DynamicUser=yes" };

        cr_assert(text);
        for (size_t i = 0; i < ELEMENTSOF(required); i++) {
                char *needle = xasprintf("\n%s", required[i]);
                cr_assert(strstr(text, needle), "edfd.service lacks %s", required[i]);
                free(needle);
        }
        for (size_t i = 0; i < ELEMENTSOF(forbidden); i++) {
                char *needle = xasprintf("\n%s", forbidden[i]);
                cr_assert(!strstr(text, needle), "edfd.service has %s, which breaks edfd", forbidden[i]);
                free(needle);
        }
        /* The capability set: CAP_SYS_NICE, plus what the proc connector needs (CAP_NET_ADMIN) and the
         * throttle counter's BPF program (CAP_BPF, CAP_PERFMON), nothing else. */
        {
                const char *cap = strstr(text, "\nCapabilityBoundingSet=");
                char line[256];
                cr_assert(cap);
                sscanf(cap + 1, "CapabilityBoundingSet=%255[^\n]", line);
                cr_assert(strstr(line, "CAP_SYS_NICE"), "CapabilityBoundingSet= lacks CAP_SYS_NICE: %s", line);
                for (char *tok = strtok(line, " "); tok; tok = strtok(NULL, " "))
                        cr_assert(streq(tok, "CAP_SYS_NICE") || streq(tok, "CAP_NET_ADMIN") || streq(tok, "CAP_BPF") ||
                                          streq(tok, "CAP_PERFMON"),
                                  "CapabilityBoundingSet= has %s, more than CAP_SYS_NICE, CAP_NET_ADMIN, CAP_BPF and "
                                  "CAP_PERFMON", tok);
        }
        free(text);
        free(unit);
        remove_test_dir();
}

/* ---- systemd-analyze verify ---- */

Test(units, verify) {
        char *analyze = find_program("systemd-analyze"), *unit, *out = NULL;
        int status;

        if (!analyze)
                cr_skip_test("systemd-analyze is not installed");
        unit = unit_file(make_test_dir(), true);
        char *argv[] = { analyze, (char *) "verify", (char *) "--man=no", unit, NULL };
        status = run(argv, &out);
        if (strstr(out, "Unknown option") || strstr(out, "unrecognized option"))
                cr_skip_test("this systemd-analyze has no verify --man=: %s", out);
        /* verify exits 0 on warnings (an unknown key is "ignored"): any output is a finding. */
        cr_assert(status == 0 && out[strspn(out, " \n")] == '\0',
                  "systemd-analyze verify %s (status %d) says:\n%s", unit, status, out);
        free(out);
        free(unit);
        free(analyze);
        remove_test_dir();
}

/* The D-Bus activation file starts the service by the alias the unit installs, as the same binary. */
Test(units, activation_file_matches_the_unit) {
        const char *build = getenv("EDFD_UNITS_BUILD"), *src = env_or_skip("EDFD_UNITS_SRC");
        char *path = xasprintf("%s/org.edfd.Admission1.service", build ? build : src);
        char *act = read_file(path), *unit_path = unit_file(make_test_dir(), false), *unit = read_file(unit_path);
        char name[256] = "", exec[512] = "", systemd_service[256] = "", unit_exec[512] = "";
        const char *p;

        if (!act) {
                free(path);
                path = xasprintf("%s/org.edfd.Admission1.service.in", src);
                act = read_file(path);
                if (act) {
                        char *fixed = replace_all(act, "@sbindir@", "/usr/sbin");
                        free(act);
                        act = fixed;
                }
        }
        cr_assert(act, "cannot read %s", path);
        cr_assert((p = strstr(act, "\nName=")) && sscanf(p, "\nName=%255[^\n]", name) == 1, "no Name= in %s", path);
        cr_assert((p = strstr(act, "\nExec=")) && sscanf(p, "\nExec=%511[^\n]", exec) == 1, "no Exec= in %s", path);
        cr_assert((p = strstr(act, "\nSystemdService=")) &&
                          sscanf(p, "\nSystemdService=%255[^\n]", systemd_service) == 1,
                  "no SystemdService= in %s", path);
        cr_assert((p = strstr(unit, "\nExecStart=")) && sscanf(p, "\nExecStart=%511[^\n]", unit_exec) == 1);
        cr_assert_str_eq(name, BUS_NAME);
        cr_assert(strstr(unit, "\nBusName=" BUS_NAME "\n"), "edfd.service has no BusName=" BUS_NAME);
        cr_assert(streq(systemd_service, "edfd.service") ||
                          (strstr(unit, systemd_service) && strstr(unit, "\nAlias=") &&
                           strstr(strstr(unit, "\nAlias="), systemd_service)),
                  "SystemdService=%s is neither edfd.service nor an Alias= of it", systemd_service);
        cr_assert_str_eq(exec, unit_exec, "the activation file runs %s, the unit %s", exec, unit_exec);
        free(act);
        free(unit);
        free(unit_path);
        free(path);
        remove_test_dir();
}

/* ---- the polkit policy ---- */

Test(units, polkit_policy_is_valid) {
        const char *src = env_or_skip("EDFD_UNITS_SRC");
        char *xmllint = find_program("xmllint"), *policy = xasprintf("%s/org.edfd.Admission1.policy", src), *out = NULL;
        const char *dtd = "/usr/share/polkit-1/policyconfig-1.dtd";
        char *text = read_file(policy);
        int status;

        cr_assert(text, "cannot read %s", policy);
        cr_assert(strstr(text, "id=\"org.edfd.Admission1.admit\""), "no action org.edfd.Admission1.admit");
        cr_assert(strstr(text, "id=\"org.edfd.Admission1.manage\""), "no action org.edfd.Admission1.manage");
        if (!xmllint)
                cr_skip_test("xmllint is not installed (the actions are present)");
        if (access(dtd, R_OK) < 0)
                cr_skip_test("%s is not installed (the actions are present)", dtd);
        char *argv[] = { xmllint, (char *) "--noout", (char *) "--nonet", (char *) "--dtdvalid", (char *) dtd, policy,
                         NULL };
        status = run(argv, &out);
        cr_assert(status == 0 && !*out, "%s is not valid against polkit's DTD:\n%s", policy, out);
        free(out);
        free(text);
        free(policy);
        free(xmllint);
}

/* ---- the D-Bus policy on a real dbus-daemon ---- */

static const char bus_conf[] =
        "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
        " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
        "<busconfig>\n"
        "  <type>system</type>\n"
        "  <listen>unix:path=%s/bus</listen>\n"
        "  <auth>EXTERNAL</auth>\n"
        "  <policy context=\"default\">\n"
        "    <allow user=\"*\"/>\n"
        "    <deny own=\"*\"/>\n"
        "    <deny send_type=\"method_call\"/>\n"
        "    <allow send_type=\"signal\"/>\n"
        "    <allow send_requested_reply=\"true\" send_type=\"method_return\"/>\n"
        "    <allow send_requested_reply=\"true\" send_type=\"error\"/>\n"
        "    <allow receive_type=\"method_call\"/>\n"
        "    <allow receive_type=\"method_return\"/>\n"
        "    <allow receive_type=\"error\"/>\n"
        "    <allow receive_type=\"signal\"/>\n"
        "    <allow send_destination=\"org.freedesktop.DBus\" send_interface=\"org.freedesktop.DBus\"/>\n"
        "    <allow send_destination=\"org.freedesktop.DBus\" send_interface=\"org.freedesktop.DBus.Introspectable\"/>\n"
        "  </policy>\n"
        "  <include>%s</include>\n"
        "</busconfig>\n";

typedef struct Bus {
        pid_t pid;
        char address[512];
        char *log;
} Bus;

static void bus_start(Bus *b, const char *dir, const char *policy) {
        char *conf = xasprintf("%s/bus.conf", dir), *text = xasprintf(bus_conf, dir, policy);
        char *arg = xasprintf("--config-file=%s", conf);
        const char *daemon = access("/usr/bin/dbus-daemon", X_OK) == 0 ? "/usr/bin/dbus-daemon" : "/bin/dbus-daemon";
        int p[2], logfd;
        size_t len = 0;

        if (access(daemon, X_OK) < 0)
                cr_skip_test("dbus-daemon is not installed");
        write_file(conf, text);
        b->log = xasprintf("%s/dbus.log", dir);
        logfd = open(b->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        cr_assert_geq(logfd, 0);
        cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
        b->pid = fork();
        cr_assert_geq(b->pid, 0);
        if (b->pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                dup2(p[1], 3);
                dup2(logfd, STDOUT_FILENO);
                dup2(logfd, STDERR_FILENO);
                execl(daemon, daemon, arg, "--nofork", "--print-address=3", (char *) NULL);
                _exit(127);
        }
        close(p[1]);
        close(logfd);
        while (len < sizeof b->address - 1 && !memchr(b->address, '\n', len)) {
                struct pollfd pfd = { .fd = p[0], .events = POLLIN };
                ssize_t k;
                if (poll(&pfd, 1, 10000) <= 0)
                        break;
                k = read(p[0], b->address + len, sizeof b->address - 1 - len);
                if (k <= 0)
                        break;
                len += (size_t) k;
        }
        close(p[0]);
        b->address[len] = '\0';
        if (!strchr(b->address, '\n')) {
                char *log = read_file(b->log);
                cr_assert_fail("dbus-daemon did not start with the shipped policy included:\n%s", log ? log : "");
        }
        *strchr(b->address, '\n') = '\0';
        free(conf);
        free(text);
        free(arg);
}

static void bus_stop(Bus *b) {
        if (b->pid > 0) {
                kill(b->pid, SIGTERM);
                (void) waitpid(b->pid, NULL, 0);
                b->pid = 0;
        }
        free(b->log);
}

static int connect_bus(const char *address, sd_bus **ret) {
        sd_bus *bus = NULL;
        int r = sd_bus_new(&bus);

        if (r >= 0)
                r = sd_bus_set_address(bus, address);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0) {
                sd_bus_unref(bus);
                return r;
        }
        *ret = bus;
        return 0;
}

/* What the unprivileged client found; its exit status. */
enum {
        U_OK,
        U_SETUID,
        U_CONNECT,
        U_OWNED_IT,
        U_OWN_NOT_DENIED,
        U_OWNED_OTHER,
        U_ECHO,
        U_INTROSPECT,
        U_OTHER_IFACE_ALLOWED,
        _U_MAX,
};

static const char *const u_what[_U_MAX] = {
        [U_SETUID] = "could not drop to uid 65534",
        [U_CONNECT] = "could not connect to the bus",
        [U_OWNED_IT] = "could own (or queue for) org.edfd.Admission1",
        [U_OWN_NOT_DENIED] = "was refused org.edfd.Admission1 with something other than AccessDenied",
        [U_OWNED_OTHER] = "could own org.example.Other",
        [U_ECHO] = "could not call org.edfd.Admission1.Manager.Echo",
        [U_INTROSPECT] = "could not introspect edfd",
        [U_OTHER_IFACE_ALLOWED] = "could call an interface of edfd's that the policy does not open",
};

_Noreturn static void unprivileged(const char *address, bool server_up) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        sd_bus *bus = NULL;
        uint64_t v = 0;
        int r;

        if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 || setresuid(NOBODY, NOBODY, NOBODY) < 0)
                _exit(U_SETUID);
        if (connect_bus(address, &bus) < 0)
                _exit(U_CONNECT);
        r = sd_bus_request_name(bus, BUS_NAME, SD_BUS_NAME_QUEUE);
        if (r >= 0)
                _exit(U_OWNED_IT);
        if (r != -EACCES)
                _exit(U_OWN_NOT_DENIED);
        if (sd_bus_request_name(bus, "org.example.Other", 0) >= 0)
                _exit(U_OWNED_OTHER);
        if (server_up) {
                if (sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_INTERFACE, "Echo", &e, &reply, "t", UINT64_C(42)) < 0 ||
                    sd_bus_message_read(reply, "t", &v) < 0 || v != 42)
                        _exit(U_ECHO);
                reply = sd_bus_message_unref(reply);
                sd_bus_error_free(&e);
                if (sd_bus_call_method(bus, BUS_NAME, BUS_PATH, "org.freedesktop.DBus.Introspectable", "Introspect", &e,
                                       &reply, "") < 0)
                        _exit(U_INTROSPECT);
                reply = sd_bus_message_unref(reply);
                sd_bus_error_free(&e);
                r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, "org.example.Hidden", "Echo", &e, &reply, "t",
                                       UINT64_C(1));
                if (r >= 0 || !sd_bus_error_has_name(&e, SD_BUS_ERROR_ACCESS_DENIED))
                        _exit(U_OTHER_IFACE_ALLOWED);
        }
        _exit(U_OK);
}

static void run_unprivileged(const char *address, bool server_up) {
        int status;
        pid_t pid = fork();

        cr_assert_geq(pid, 0);
        if (pid == 0) {
                (void) close_range(3, ~0U, 0);
                unprivileged(address, server_up);
        }
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status), "the unprivileged client crashed");
        cr_assert_eq(WEXITSTATUS(status), U_OK, "under the shipped policy, uid %d %s", NOBODY,
                     WEXITSTATUS(status) < _U_MAX && u_what[WEXITSTATUS(status)] ? u_what[WEXITSTATUS(status)]
                                                                                 : "failed");
}

static int method_echo(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        uint64_t v;
        int r = sd_bus_message_read(m, "t", &v);

        if (r < 0)
                return r;
        return sd_bus_reply_method_return(m, "t", v);
}

static const sd_bus_vtable echo_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Echo", "t", "t", method_echo, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

static const sd_bus_vtable hidden_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Echo", "t", "t", method_echo, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

/* A root process that owns the name and answers Echo until it is killed. Writes a byte once it
 * owns the name, or exits 1. */
_Noreturn static void root_server(const char *address, int ready) {
        sd_bus *bus = NULL;

        if (connect_bus(address, &bus) < 0 ||
            sd_bus_add_object_vtable(bus, NULL, BUS_PATH, BUS_INTERFACE, echo_vtable, NULL) < 0 ||
            sd_bus_add_object_vtable(bus, NULL, BUS_PATH, "org.example.Hidden", hidden_vtable, NULL) < 0 ||
            sd_bus_request_name(bus, BUS_NAME, 0) < 0)
                _exit(1);
        if (write(ready, "R", 1) != 1)
                _exit(2);
        for (;;) {
                int r = sd_bus_process(bus, NULL);
                if (r < 0)
                        _exit(3);
                if (r == 0 && sd_bus_wait(bus, UINT64_MAX) < 0)
                        _exit(4);
        }
}

Test(units, bus_policy) {
        const char *src = env_or_skip("EDFD_UNITS_SRC");
        char policy[PATH_MAX], *raw = xasprintf("%s/org.edfd.Admission1.conf", src), *log;
        const char *dir;
        Bus b = {};
        pid_t server;
        int p[2], status;
        char c = 0;

        if (geteuid() != 0)
                cr_skip_test("needs root (to own the name, and to become uid %d)", NOBODY);
        cr_assert(realpath(raw, policy), "cannot find %s", raw);
        free(raw);
        dir = make_test_dir();
        bus_start(&b, dir, policy);

        /* Before anyone owns the name, and while root owns it. */
        run_unprivileged(b.address, false);

        cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
        server = fork();
        cr_assert_geq(server, 0);
        if (server == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                close(p[0]);
                root_server(b.address, p[1]);
        }
        close(p[1]);
        if (read(p[0], &c, 1) != 1) {
                (void) waitpid(server, &status, 0);
                log = read_file(b.log);
                cr_assert_fail("root could not own %s under the shipped policy (status %d); dbus-daemon says:\n%s",
                               BUS_NAME, WIFEXITED(status) ? WEXITSTATUS(status) : -1, log ? log : "");
        }
        close(p[0]);
        run_unprivileged(b.address, true);

        kill(server, SIGKILL);
        (void) waitpid(server, NULL, 0);
        /* Nothing about the configuration ("Rejected send message" lines are the refusals above). */
        log = read_file(b.log);
        for (char *line = log ? strtok(log, "\n") : NULL; line; line = strtok(NULL, "\n"))
                cr_assert(!strstr(line, "Encountered error") && !strstr(line, "nknown") && !strstr(line, ".conf") &&
                                  !strstr(line, "ttribute") && !strstr(line, "lement"),
                          "dbus-daemon complained about the configuration: %s", line);
        free(log);
        bus_stop(&b);
        remove_test_dir();
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* bench-edfd: run a command against a fresh edfd on a private bus, as dbus-run-session does for a
 * session bus.
 *
 *   bench-edfd [--edfd PATH] [--config FILE] [--log] -- COMMAND [ARG...]
 *
 * Makes a temporary directory on tmpfs (/dev/shm, as /run is on a normal system), starts
 * dbus-daemon there with the system bus's policy shape plus edfd's own policy file
 * (units/org.edfd.Admission1.conf), starts edfd with its state directory in the same place and its
 * own NOTIFY_SOCKET (read all the time by a thread: edfd's sd_notify blocks once a datagram
 * socket's queue is full, and under systemd each change sends a STATUS= line, so it is part of
 * the cost measured), waits for READY=1, then runs COMMAND with DBUS_SYSTEM_BUS_ADDRESS, EDFD_PID,
 * EDFD_BUS_PID (dbus-daemon's) and EDFD_BENCH_DIR set. Afterwards it stops edfd (SIGTERM) and the bus and removes the directory.
 * Exits with COMMAND's status; 1 if the setup failed (edfd's log is printed then, or always with
 * --log). */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef BENCH_EDFD_BINARY
#error "BENCH_EDFD_BINARY must name the built edfd"
#endif
#ifndef BENCH_SOURCE_ROOT
#error "BENCH_SOURCE_ROOT must name the source tree"
#endif

extern char **environ;

static char dir[64];
static int notify_fd = -1;
static volatile unsigned long n_notify;

static const char bus_conf_template[] =
        "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
        " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
        "<busconfig>\n"
        "  <type>system</type>\n"
        "  <listen>unix:path=%s/bus.sock</listen>\n"
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
        "    <allow send_destination=\"org.freedesktop.DBus\" send_interface=\"org.freedesktop.DBus.Properties\"/>\n"
        "  </policy>\n"
        "  <include>%s/units/org.edfd.Admission1.conf</include>\n"
        "</busconfig>\n";

static uint64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static void remove_dir(void) {
        char cmd[128];

        if (!dir[0])
                return;
        /* Only our own mkdtemp() directory, whose name we made. */
        snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", dir);
        if (system(cmd) != 0)
                fprintf(stderr, "bench-edfd: could not remove %s\n", dir);
}

static void print_log(void) {
        char path[128], buf[4096];
        size_t n;
        FILE *f;

        snprintf(path, sizeof path, "%s/edfd.log", dir);
        f = fopen(path, "re");
        if (!f)
                return;
        fprintf(stderr, "---- edfd's log\n");
        while ((n = fread(buf, 1, sizeof buf, f)) > 0)
                fwrite(buf, 1, n, stderr);
        fclose(f);
        fprintf(stderr, "----\n");
}

/* Read one notify datagram with a timeout; returns its length, 0 on timeout, -1 on error. */
static ssize_t notify_read(char *buf, size_t size, int timeout_ms) {
        struct pollfd p = { .fd = notify_fd, .events = POLLIN };
        ssize_t n;

        if (poll(&p, 1, timeout_ms) <= 0)
                return 0;
        n = recv(notify_fd, buf, size - 1, MSG_DONTWAIT);
        if (n < 0)
                return errno == EAGAIN ? 0 : -1;
        buf[n] = '\0';
        return n;
}

static void *notify_drain(void *arg) {
        char buf[4096];

        (void) arg;
        for (;;)
                if (recv(notify_fd, buf, sizeof buf, 0) >= 0)
                        n_notify++;
        return NULL;
}

static pid_t spawn(char *const argv[], char *const envp[], int out_fd, int log_fd) {
        pid_t pid = fork();

        if (pid != 0)
                return pid;
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (log_fd >= 0) {
                dup2(log_fd, STDOUT_FILENO);
                dup2(log_fd, STDERR_FILENO);
        }
        if (out_fd >= 0 && out_fd != 3) {
                dup2(out_fd, 3);
                close(out_fd);
        }
        execve(argv[0], argv, envp);
        fprintf(stderr, "bench-edfd: cannot execute %s: %s\n", argv[0], strerror(errno));
        _exit(127);
}

static int stop(pid_t pid, const char *name) {
        int status = 0;

        if (pid <= 0)
                return 0;
        kill(pid, SIGTERM);
        for (int i = 0; i < 1000; i++) {
                pid_t r = waitpid(pid, &status, WNOHANG);
                if (r == pid)
                        return status;
                usleep(10000);
        }
        fprintf(stderr, "bench-edfd: %s did not stop on SIGTERM within 10 s: killed\n", name);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return status;
}

static volatile sig_atomic_t got_signal;

static void on_signal(int sig) {
        got_signal = sig;
}

static void usage(void) {
        fprintf(stderr, "usage: bench-edfd [--edfd PATH] [--config FILE] [--log] -- COMMAND [ARG...]\n");
        exit(2);
}

int main(int argc, char *argv[]) {
        const char *edfd = BENCH_EDFD_BINARY, *config = BENCH_SOURCE_ROOT "/tests/bench/bench.yaml";
        char path[256], address[512], buf[4096], env_addr[600], env_pid[64], env_dir[128], env_notify[128];
        bool show_log = false;
        pid_t bus_pid = 0, edfd_pid = 0, cmd_pid;
        int i, status = 0, ret = 1, p[2], log_fd;
        FILE *f;

        for (i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--edfd") == 0 && i + 1 < argc)
                        edfd = argv[++i];
                else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
                        config = argv[++i];
                else if (strcmp(argv[i], "--log") == 0)
                        show_log = true;
                else if (strcmp(argv[i], "--") == 0) {
                        i++;
                        break;
                } else
                        usage();
        }
        if (i >= argc)
                usage();
        if (geteuid() != 0) {
                fprintf(stderr, "bench-edfd: edfd needs root (CAP_SYS_NICE) to apply SCHED_DEADLINE: run as root\n");
                return 1;
        }
        signal(SIGPIPE, SIG_IGN);
        /* Interrupted: pass it on to the command, then stop edfd and the bus and clean up as usual. */
        {
                struct sigaction sa = { .sa_handler = on_signal };
                sigaction(SIGTERM, &sa, NULL);
                sigaction(SIGINT, &sa, NULL);
                sigaction(SIGHUP, &sa, NULL);
        }

        snprintf(dir, sizeof dir, "/dev/shm/edfd-bench.XXXXXX");
        if (!mkdtemp(dir)) {
                fprintf(stderr, "bench-edfd: mkdtemp in /dev/shm: %s\n", strerror(errno));
                dir[0] = '\0';
                return 1;
        }

        /* The bus. */
        snprintf(path, sizeof path, "%s/bus.conf", dir);
        f = fopen(path, "we");
        if (!f || fprintf(f, bus_conf_template, dir, BENCH_SOURCE_ROOT) < 0 || fclose(f) != 0) {
                fprintf(stderr, "bench-edfd: cannot write %s\n", path);
                goto finish;
        }
        if (pipe2(p, O_CLOEXEC) < 0)
                goto finish;
        snprintf(path, sizeof path, "%s/dbus.log", dir);
        log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (log_fd < 0)
                goto finish;
        snprintf(path, sizeof path, "%s/bus.conf", dir);
        {
                char arg_conf[300];
                snprintf(arg_conf, sizeof arg_conf, "--config-file=%s", path);
                char *bus_argv[] = { (char *) "/usr/bin/dbus-daemon", arg_conf, (char *) "--nofork",
                                     (char *) "--print-address=3", NULL };
                bus_pid = spawn(bus_argv, environ, p[1], log_fd);
        }
        close(log_fd);
        close(p[1]);
        {
                size_t n = 0;
                uint64_t end = now_ms() + 10000;
                while (n == 0 || address[n - 1] != '\n') {
                        struct pollfd pf = { .fd = p[0], .events = POLLIN };
                        ssize_t k;
                        if (now_ms() > end || poll(&pf, 1, 1000) < 0)
                                break;
                        k = read(p[0], address + n, sizeof address - 1 - n);
                        if (k <= 0)
                                break;
                        n += (size_t) k;
                }
                close(p[0]);
                address[n] = '\0';
                address[strcspn(address, "\n")] = '\0';
                if (n == 0 || !address[0]) {
                        fprintf(stderr, "bench-edfd: dbus-daemon printed no address\n");
                        goto finish;
                }
        }

        /* The notify socket. */
        {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                int rcv = 1 << 20;
                snprintf(sa.sun_path, sizeof sa.sun_path, "%s/notify", dir);
                notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                if (notify_fd < 0 || bind(notify_fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                        fprintf(stderr, "bench-edfd: notify socket: %s\n", strerror(errno));
                        goto finish;
                }
                (void) setsockopt(notify_fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
                snprintf(env_notify, sizeof env_notify, "NOTIFY_SOCKET=%s", sa.sun_path);
        }

        /* edfd. */
        snprintf(env_addr, sizeof env_addr, "DBUS_SYSTEM_BUS_ADDRESS=%s", address);
        snprintf(path, sizeof path, "%s/edfd.log", dir);
        log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (log_fd < 0)
                goto finish;
        {
                char state[128], cgroot[128];
                /* Not a cgroup v2 directory: groups stay unbound, nothing is created in /sys/fs/cgroup. */
                snprintf(state, sizeof state, "%s/state", dir);
                snprintf(cgroot, sizeof cgroot, "%s/no-cgroup", dir);
                char *edfd_argv[] = { (char *) edfd, (char *) "--config", (char *) config, (char *) "--state-dir", state,
                                      (char *) "--cgroup-root", cgroot, NULL };
                char *edfd_env[] = { env_addr, env_notify, (char *) "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
                /* One pidfd per admitted thread: room for the 10,000 of the memory benchmark. */
                struct rlimit rl = { 65536, 65536 };
                (void) setrlimit(RLIMIT_NOFILE, &rl);
                edfd_pid = spawn(edfd_argv, edfd_env, -1, log_fd);
        }
        close(log_fd);
        {
                uint64_t end = now_ms() + 10000;
                bool ready = false;
                while (!ready && now_ms() < end) {
                        ssize_t n = notify_read(buf, sizeof buf, 100);
                        if (n < 0)
                                break;
                        if (n > 0 && (strncmp(buf, "READY=1", 7) == 0 || strstr(buf, "\nREADY=1")))
                                ready = true;
                        if (waitpid(edfd_pid, &status, WNOHANG) == edfd_pid) {
                                fprintf(stderr, "bench-edfd: edfd exited before READY=1\n");
                                edfd_pid = 0;
                                print_log();
                                goto finish;
                        }
                }
                if (!ready) {
                        fprintf(stderr, "bench-edfd: edfd sent no READY=1 within 10 s\n");
                        print_log();
                        goto finish;
                }
        }
        {
                pthread_t t;
                if (pthread_create(&t, NULL, notify_drain, NULL) != 0)
                        goto finish;
                pthread_detach(t);
        }

        /* The command. */
        snprintf(env_pid, sizeof env_pid, "%d", (int) edfd_pid);
        snprintf(env_dir, sizeof env_dir, "%s", dir);
        setenv("DBUS_SYSTEM_BUS_ADDRESS", address, 1);
        setenv("EDFD_PID", env_pid, 1);
        setenv("EDFD_BENCH_DIR", env_dir, 1);
        snprintf(env_pid, sizeof env_pid, "%d", (int) bus_pid);
        setenv("EDFD_BUS_PID", env_pid, 1);
        cmd_pid = fork();
        if (cmd_pid == 0) {
                signal(SIGTERM, SIG_DFL);
                signal(SIGINT, SIG_DFL);
                signal(SIGHUP, SIG_DFL);
                execvp(argv[i], argv + i);
                fprintf(stderr, "bench-edfd: cannot execute %s: %s\n", argv[i], strerror(errno));
                _exit(127);
        }
        if (cmd_pid < 0)
                goto finish;
        while (waitpid(cmd_pid, &status, 0) < 0 && errno == EINTR)
                if (got_signal)
                        kill(cmd_pid, got_signal);
        ret = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

finish:
        if (edfd_pid > 0) {
                if (waitpid(edfd_pid, &status, WNOHANG) == edfd_pid) {
                        fprintf(stderr, "bench-edfd: edfd died during the benchmark (status 0x%x)\n", status);
                        show_log = true;
                        ret = ret ? ret : 1;
                } else {
                        status = stop(edfd_pid, "edfd");
                        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                                fprintf(stderr, "bench-edfd: edfd did not exit cleanly (status 0x%x)\n", status);
                                show_log = true;
                        }
                }
        }
        if (show_log)
                print_log();
        stop(bus_pid, "dbus-daemon");
        remove_dir();
        return ret;
}

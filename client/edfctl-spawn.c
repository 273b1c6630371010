/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A command run as edfctl's child (admit --startup, run): fork, an optional step in the child, exec;
 * a failure of either comes back over a close-on-exec pipe, so that edfctl can say what went wrong
 * and end with 126 or 127 as a shell would. edfctl stays the command's parent: it forwards SIGTERM,
 * SIGHUP, SIGUSR1 and SIGUSR2 to it (SIGINT and SIGQUIT from a terminal reach both already, and
 * edfctl ignores them: it waits for the command's end), and ends as the command ended. */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "edfctl.h"

static volatile sig_atomic_t child_pid;

static void forward(int sig) {
        if (child_pid > 0)
                (void) kill((pid_t) child_pid, sig);
}

/* What the child reports when it cannot run the command. */
typedef struct SpawnFailure {
        int step; /* 0: the exec, 1: before_exec */
        int err;
} SpawnFailure;

int command_spawn(char **command, int (*before_exec)(void *userdata), void *userdata, const char *before_what,
                  pid_t *ret_pid) {
        static const int forwarded[] = { SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
        struct sigaction sa = { .sa_handler = forward, .sa_flags = SA_RESTART };
        SpawnFailure f = {};
        int pipefd[2], status;
        ssize_t n;
        pid_t pid;

        if (pipe2(pipefd, O_CLOEXEC) < 0) {
                fprintf(stderr, "edfctl: cannot make a pipe: %s\n", strerror(errno));
                return EDFCTL_EXIT_FAILED;
        }
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
                fprintf(stderr, "edfctl: cannot fork: %s\n", strerror(errno));
                close(pipefd[0]);
                close(pipefd[1]);
                return EDFCTL_EXIT_FAILED;
        }
        if (pid == 0) {
                int r;
                close(pipefd[0]);
                if (before_exec && (r = before_exec(userdata)) < 0)
                        f = (SpawnFailure) { .step = 1, .err = -r };
                else {
                        execvp(command[0], command);
                        f = (SpawnFailure) { .step = 0, .err = errno };
                }
                (void) !write(pipefd[1], &f, sizeof f);
                _exit(f.step == 0 && f.err == ENOENT ? EDFCTL_EXIT_EXEC_NOT_FOUND : EDFCTL_EXIT_EXEC_FAILED);
        }
        child_pid = pid;
        for (size_t i = 0; i < ELEMENTSOF(forwarded); i++)
                (void) sigaction(forwarded[i], &sa, NULL);
        signal(SIGINT, SIG_IGN);
        signal(SIGQUIT, SIG_IGN);
        close(pipefd[1]);
        do
                n = read(pipefd[0], &f, sizeof f);
        while (n < 0 && errno == EINTR);
        close(pipefd[0]);
        if (n == (ssize_t) sizeof f) {
                if (f.step == 1)
                        fprintf(stderr, "edfctl: cannot %s for %s: %s\n", before_what, tty(command[0]), strerror(f.err));
                else
                        fprintf(stderr, "edfctl: cannot execute %s: %s\n", tty(command[0]), strerror(f.err));
                while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                        ;
                child_pid = 0;
                return f.step == 0 && f.err == ENOENT ? EDFCTL_EXIT_EXEC_NOT_FOUND : EDFCTL_EXIT_EXEC_FAILED;
        }
        *ret_pid = pid;
        return EDFCTL_EXIT_OK;
}

void command_ended(void) {
        child_pid = 0;
}

int command_end_as(int status) {
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        if (WIFSIGNALED(status)) {
                int sig = WTERMSIG(status);
                signal(sig, SIG_DFL);
                sigset_t ss;
                sigemptyset(&ss);
                sigaddset(&ss, sig);
                sigprocmask(SIG_UNBLOCK, &ss, NULL);
                raise(sig);
                return 128 + sig; /* a signal that does not end edfctl (SIGCHLD-like): as a shell says it */
        }
        return EDFCTL_EXIT_FAILED;
}

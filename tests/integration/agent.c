/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent: a child process of another uid on its own bus connection that runs the calls sent to
 * it, for the tests of what unprivileged callers may do (test-authz.c, test-hostile.c). See
 * agent.h. */

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "agent.h"
#include "shared/protocol.h"

int agent_drop_to(uid_t uid) {
        if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
                return -errno;
        return 0;
}

int agent_keep_only_fd(int fd) {
        if (fd != 3) {
                if (dup2(fd, 3) < 0)
                        _exit(110);
        }
        (void) close_range(4, ~0U, 0);
        return 3;
}

void agent_die_with_parent(pid_t parent) {
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
                _exit(111);
}

static void agent_reply_send(int fd, AgentReply *rep) {
        if (send(fd, rep, sizeof *rep, MSG_NOSIGNAL) != (ssize_t) sizeof *rep)
                _exit(114);
}

static void agent_run_call(sd_bus *bus, const AgentCall *c, AgentReply *rep) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *m = NULL, *reply = NULL;
        size_t k = 0;
        char type;
        int r;

        memset(rep, 0, sizeof *rep);
        if (strcmp(c->member, "!RequestName") == 0) {
                rep->r = sd_bus_request_name(bus, c->str, 0);
                return;
        }
        r = sd_bus_message_new_method_call(bus, &m, EDFD_BUS_NAME, EDFD_BUS_PATH,
                                           c->interface[0] ? c->interface : EDFD_BUS_INTERFACE, c->member);
        for (const char *t = c->types; r >= 0 && *t; t++) {
                switch (*t) {
                case 't':
                        r = sd_bus_message_append_basic(m, 't', &c->num[k++]);
                        break;
                case 'u': {
                        uint32_t u = (uint32_t) c->num[k++];
                        r = sd_bus_message_append_basic(m, 'u', &u);
                        break;
                }
                case 'i': {
                        int32_t i = (int32_t) c->num[k++];
                        r = sd_bus_message_append_basic(m, 'i', &i);
                        break;
                }
                case 'b': {
                        int b = !!c->num[k++];
                        r = sd_bus_message_append_basic(m, 'b', &b);
                        break;
                }
                case 's':
                        r = sd_bus_message_append_basic(m, 's', c->str);
                        break;
                default:
                        r = -EINVAL;
                }
        }
        if (r >= 0)
                r = sd_bus_call(bus, m, 30 * UINT64_C(1000000), &e, &reply);
        rep->r = r;
        if (e.name)
                snprintf(rep->name, sizeof rep->name, "%s", e.name);
        else if (r < 0)
                snprintf(rep->name, sizeof rep->name, "errno:%s", strerror(-r));
        if (e.message)
                snprintf(rep->message, sizeof rep->message, "%s", e.message);
        if (r >= 0 && reply && sd_bus_message_peek_type(reply, &type, NULL) > 0) {
                if (type == 't')
                        (void) sd_bus_message_read_basic(reply, 't', &rep->value);
                else if (type == 'u') {
                        uint32_t u = 0;
                        (void) sd_bus_message_read_basic(reply, 'u', &u);
                        rep->value = u;
                }
        }
        sd_bus_error_free(&e);
        sd_bus_message_unref(m);
        sd_bus_message_unref(reply);
}

_Noreturn static void agent_main(pid_t parent, int fd, const char *address, uid_t uid) {
        static AgentCall call;
        AgentReply rep = {};
        sd_bus *bus = NULL;

        fd = agent_keep_only_fd(fd);
        rep.r = agent_drop_to(uid);
        agent_die_with_parent(parent);
        if (rep.r == 0 && (getuid() != uid || geteuid() != uid))
                rep.r = -EPERM;
        if (rep.r == 0) {
                rep.r = sd_bus_new(&bus);
                if (rep.r >= 0)
                        rep.r = sd_bus_set_address(bus, address);
                if (rep.r >= 0)
                        rep.r = sd_bus_set_bus_client(bus, 1);
                if (rep.r >= 0)
                        rep.r = sd_bus_start(bus);
                if (rep.r > 0)
                        rep.r = 0;
        }
        agent_reply_send(fd, &rep);
        if (rep.r < 0)
                _exit(115);
        for (;;) {
                ssize_t n = recv(fd, &call, sizeof call, 0);
                if (n <= 0)
                        _exit(0);
                if (n != (ssize_t) sizeof call)
                        _exit(116);
                agent_run_call(bus, &call, &rep);
                agent_reply_send(fd, &rep);
        }
}

Agent *agent_start_as(Harness *h, uid_t uid) {
        Agent *a = calloc(1, sizeof *a);
        pid_t parent = getpid();
        AgentReply rep;
        int sv[2];

        cr_assert(a);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        a->pid = fork();
        cr_assert_geq(a->pid, 0);
        if (a->pid == 0) {
                close(sv[0]);
                agent_main(parent, sv[1], h->bus_address, uid);
        }
        close(sv[1]);
        a->fd = sv[0];
        cr_assert_eq(recv(a->fd, &rep, sizeof rep, 0), (ssize_t) sizeof rep, "the agent died before connecting");
        cr_assert_eq(rep.r, 0, "the agent (uid %d) could not connect to the bus: %s", (int) uid, strerror(-rep.r));
        return a;
}

Agent *agent_start(Harness *h) {
        return agent_start_as(h, AGENT_NOBODY);
}

void agent_stop(Agent *a) {
        if (!a)
                return;
        close(a->fd);
        kill(a->pid, SIGKILL);
        (void) waitpid(a->pid, NULL, 0);
        free(a);
}

/* Send member(types...) to the agent, to run as nobody: t u b i take uint64_t arguments, s a string.
 * On interface iface (NULL: edfd's manager). The reply is read with agent_recv(). */
static void agent_sendv(Agent *a, const char *iface, const char *member, const char *types, va_list ap) {
        static AgentCall c;
        size_t k = 0;

        memset(&c, 0, sizeof c);
        snprintf(c.member, sizeof c.member, "%s", member);
        snprintf(c.interface, sizeof c.interface, "%s", iface ? iface : "");
        snprintf(c.types, sizeof c.types, "%s", types);
        for (const char *t = types; *t; t++)
                if (*t == 's')
                        snprintf(c.str, sizeof c.str, "%s", va_arg(ap, const char *));
                else {
                        c.num[k] = va_arg(ap, uint64_t);
                        /* A u holds 32 bits: a larger value would reach edfd cut, and the test would
                         * not be testing what it says. */
                        cr_assert(*t != 'u' || c.num[k] <= UINT32_MAX, "%s: %" PRIu64 " does not fit in a u",
                                  member, c.num[k]);
                        k++;
                }
        cr_assert_eq(send(a->fd, &c, sizeof c, MSG_NOSIGNAL), (ssize_t) sizeof c, "the agent is gone");
}

AgentReply agent_recv(Agent *a, const char *member) {
        AgentReply rep;

        cr_assert_eq(recv(a->fd, &rep, sizeof rep, 0), (ssize_t) sizeof rep, "the agent died during %s", member);
        return rep;
}

void agent_send(Agent *a, const char *member, const char *types, ...) {
        va_list ap;

        va_start(ap, types);
        agent_sendv(a, NULL, member, types, ap);
        va_end(ap);
}

static AgentReply agent_callv(Agent *a, const char *iface, const char *member, const char *types, va_list ap) {
        agent_sendv(a, iface, member, types, ap);
        return agent_recv(a, member);
}

AgentReply agent_call(Agent *a, const char *member, const char *types, ...) {
        AgentReply rep;
        va_list ap;

        va_start(ap, types);
        rep = agent_callv(a, NULL, member, types, ap);
        va_end(ap);
        return rep;
}

AgentReply agent_call_iface(Agent *a, const char *iface, const char *member, const char *types, ...) {
        AgentReply rep;
        va_list ap;

        va_start(ap, types);
        rep = agent_callv(a, iface, member, types, ap);
        va_end(ap);
        return rep;
}


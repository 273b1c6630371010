/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The agent, for tests of what unprivileged callers may do: a child process that drops to another
 * uid, connects to the harness's bus on its own, and runs the bus calls the test sends it over a
 * socket pair, one at a time, answering each with its reply. Also the steps every such child takes:
 * drop the credentials, close what it inherited, die with its parent. */

#include <stdint.h>
#include <sys/types.h>

#include "harness.h"

#define AGENT_NOBODY 65534
#define AGENT_STR_MAX 8192

/* One call, as it crosses the socket pair. */
typedef struct AgentCall {
        char member[48];     /* "!RequestName": request the bus name in str instead */
        char interface[64];  /* "" = edfd's manager interface */
        char types[16];      /* t, u, b, i take num[], s takes str */
        uint64_t num[8];
        char str[AGENT_STR_MAX];
} AgentCall;

typedef struct AgentReply {
        int r;               /* sd_bus_call's */
        char name[160];      /* the error's name, or "errno:..." */
        char message[640];
        uint64_t value;      /* the first t or u of the reply */
} AgentReply;

typedef struct Agent {
        pid_t pid;
        int fd;
} Agent;

/* In a child: setgroups(0), then real, effective and saved gid and uid to uid. 0 or -errno. */
int agent_drop_to(uid_t uid);
/* In a child: keep only fd (as 3) and the standard streams, so that no other child's socket or the
 * harness's bus connection stays open in it. Returns 3. */
int agent_keep_only_fd(int fd);
/* In a child, after a credential change (which clears it): the parent-death signal again, and
 * _exit if the parent died before. */
void agent_die_with_parent(pid_t parent);

/* Start an agent as uid (agent_start: as nobody); asserts it connected. */
Agent *agent_start_as(Harness *h, uid_t uid);
Agent *agent_start(Harness *h);
/* Kill and reap it. Accepts NULL. */
void agent_stop(Agent *a);

/* member(types...) on edfd's manager interface: t u b i take uint64_t arguments, s a string. */
AgentReply agent_call(Agent *a, const char *member, const char *types, ...);
/* The same on another interface of edfd's object. */
AgentReply agent_call_iface(Agent *a, const char *iface, const char *member, const char *types, ...);
/* The two halves of agent_call, for a call left waiting while the test does something else. */
void agent_send(Agent *a, const char *member, const char *types, ...);
AgentReply agent_recv(Agent *a, const char *member);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The configuration's values: each reader takes one node of the YAML tree, says in the user's terms
 * what is wrong with it (under the key path the walk in conf.c is at), or stores what it means. */

#include <stdlib.h>
#include <string.h>

#include "basic/cpulist.h"
#include "basic/parse.h"
#include "basic/strv.h"
#include "conf-internal.h"
#include "core/bandwidth.h"
#include "core/duration.h"
#include "core/params.h"

#define USER_NAME_MAX 256
#define CGROUP_ROOT_MAX 3840 /* leaves room for a GROUP_PATH_MAX relative path within PATH_MAX */

static bool is_digit(char ch) {
        return ch >= '0' && ch <= '9';
}

bool conf_get_duration(Ctx *c, const YNode *v, void *ret) {
        const char *s = conf_scalar(c, v, "a duration such as 10ms"), *reason = NULL;
        char buf[YTREE_SHOW_BUF];
        uint64_t ns;

        if (!s)
                return false;
        if (duration_parse(s, &ns, &reason) < 0) {
                if (!is_digit(s[0]) && s[0] != '-' && s[0] != '+')
                        reason = "is not a duration (write it as 10ms, 250us, 1.5s)";
                error_node(c, v, "\"%s\" %s", ytree_show(s, v->len, buf), reason ?: "is not a duration");
                return false;
        }
        *(uint64_t *) ret = ns;
        return true;
}

/* A duration of at least DL_RUNTIME_MIN. */
bool conf_get_runtime(Ctx *c, const YNode *v, void *ret) {
        char buf[DURATION_MAX];
        uint64_t ns;

        if (!conf_get_duration(c, v, &ns))
                return false;
        if (ns < DL_RUNTIME_MIN) {
                error_node(c, v, "must be at least %s (the kernel's smallest runtime)",
                           duration_format(DL_RUNTIME_MIN, buf));
                return false;
        }
        *(uint64_t *) ret = ns;
        return true;
}

/* A percentage as a runtime over PERCENT_PERIOD_NS. */
bool conf_get_percent(Ctx *c, const YNode *v, void *ret_runtime) {
        const char *s = conf_scalar(c, v, "a percentage such as 20%"), *reason = NULL;
        char buf[YTREE_SHOW_BUF];
        uint64_t rt, bw;

        if (!s)
                return false;
        if (percent_parse(s, &rt, &reason) < 0) {
                if (!is_digit(s[0]) && s[0] != '-' && s[0] != '+')
                        reason = "is not a percentage (write it as 20%)";
                error_node(c, v, "\"%s\" %s", ytree_show(s, v->len, buf), reason ?: "is not a percentage");
                return false;
        }
        if (bw_of(rt, PERCENT_PERIOD_NS, &bw) < 0) {
                error_node(c, v, "\"%s\" is too large", ytree_show(s, v->len, buf));
                return false;
        }
        *(uint64_t *) ret_runtime = rt;
        return true;
}

/* A percentage in BW units, or CONF_UNLIMITED for "unlimited" when unlimited_ok. */
bool conf_get_bandwidth(Ctx *c, const YNode *v, bool unlimited_ok, uint64_t *ret_bw) {
        uint64_t rt, bw;

        if (unlimited_ok && v->type == YNODE_SCALAR && strcmp(v->value, "unlimited") == 0) {
                *ret_bw = CONF_UNLIMITED;
                return true;
        }
        if (!conf_get_percent(c, v, &rt))
                return false;
        (void) bw_of(rt, PERCENT_PERIOD_NS, &bw); /* checked by conf_get_percent() */
        *ret_bw = bw;
        return true;
}

bool conf_get_count(Ctx *c, const YNode *v, bool unlimited_ok, uint64_t *ret) {
        const char *s, *reason = NULL;
        char buf[YTREE_SHOW_BUF];
        uint64_t n;

        if (unlimited_ok && v->type == YNODE_SCALAR && strcmp(v->value, "unlimited") == 0) {
                *ret = CONF_UNLIMITED;
                return true;
        }
        s = conf_scalar(c, v, unlimited_ok ? "a whole number or unlimited" : "a whole number");
        if (!s)
                return false;
        if (parse_u64_slice(s, v->len, &n, &reason) < 0) {
                error_node(c, v, "\"%s\" %s", ytree_show(s, v->len, buf), reason);
                return false;
        }
        *ret = n;
        return true;
}

/* "20/10s": 20 requests per 10 s; "unlimited" is 0/0. */
bool conf_get_rate(Ctx *c, const YNode *v, uint64_t *ret_count, uint64_t *ret_window) {
        const char *s, *slash, *reason = NULL;
        char buf[YTREE_SHOW_BUF];
        uint64_t n, w;

        if (v->type == YNODE_SCALAR && strcmp(v->value, "unlimited") == 0) {
                *ret_count = *ret_window = 0;
                return true;
        }
        s = conf_scalar(c, v, "a rate such as 20/10s, or unlimited");
        if (!s)
                return false;
        slash = strchr(s, '/');
        if (!slash) {
                error_node(c, v, "\"%s\" is not a rate (write it as 20/10s: 20 requests every 10 seconds)",
                           ytree_show(s, v->len, buf));
                return false;
        }
        if (parse_u64_slice(s, (size_t) (slash - s), &n, &reason) < 0) {
                error_node(c, v, "\"%s\": the count %s", ytree_show(s, v->len, buf), reason);
                return false;
        }
        if (n == 0) {
                error_node(c, v, "\"%s\" allows no request at all (to forbid reservations write reservations: 0)",
                           ytree_show(s, v->len, buf));
                return false;
        }
        if (duration_parse(slash + 1, &w, &reason) < 0) {
                error_node(c, v, "\"%s\": the window %s", ytree_show(s, v->len, buf), reason ?: "is not a duration");
                return false;
        }
        if (w == 0) {
                error_node(c, v, "\"%s\": the window must not be zero", ytree_show(s, v->len, buf));
                return false;
        }
        *ret_count = n;
        *ret_window = w;
        return true;
}

bool conf_get_fork_policy(Ctx *c, const YNode *v, void *ret) {
        const char *s = conf_scalar(c, v, "split, inherit or none");
        char buf[YTREE_SHOW_BUF];
        ForkPolicy p;

        if (!s)
                return false;
        p = fork_policy_from_string(s);
        if (p == _FORK_POLICY_UNSET) {
                error_node(c, v, "\"%s\" is not a fork policy (expected split, inherit or none)",
                           ytree_show(s, v->len, buf));
                return false;
        }
        *(ForkPolicy *) ret = p;
        return true;
}

static bool is_ambiguous_boolean(const char *s) {
        static const char *const words[] = { "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off",
                                             "Off", "OFF", "y", "Y", "n", "N", "True", "TRUE", "False", "FALSE" };

        for (size_t i = 0; i < ELEMENTSOF(words); i++)
                if (strcmp(s, words[i]) == 0)
                        return true;
        return false;
}

static bool is_alnum(char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

/* Explain why s is not a user name, or NULL. Names as in /etc/passwd: letters, digits, _ . -,
 * not starting with -, an optional final $ (machine accounts), not all digits (that is a uid). */
const char *conf_user_name_problem(const char *s, size_t len) {
        bool digits = true;

        if (len == 0)
                return "is empty";
        if (len > USER_NAME_MAX)
                return "is longer than 256 bytes";
        if (s[0] == '-')
                return "must not start with -";
        for (size_t i = 0; i < len; i++) {
                char ch = s[i];

                if (ch == '$' && i == len - 1 && i > 0)
                        continue;
                if (!is_alnum(ch) && ch != '_' && ch != '.' && ch != '-')
                        return "is not a user name (letters, digits, _ . - only)";
                if (ch < '0' || ch > '9')
                        digits = false;
        }
        if (digits)
                return "is a number: write the user's name, not a uid";
        return NULL;
}

/* A group's `users:` list; NULL-terminated. */
bool conf_get_users(Ctx *c, const YNode *v, void *ret) {
        _cleanup_strv_free_ char **l = NULL;
        char ***list = ret;
        size_t m = 0;

        if (v->broken)
                return false;
        if (ytree_is_null(v)) {
                error_node(c, v, "has no value (list user names such as [alice, bob], write [] for nobody, or "
                           "leave the key out for anyone)");
                return false;
        }
        if (v->type != YNODE_SEQ) {
                error_node(c, v, "expected a sequence of user names such as [alice, bob], not %s", ytree_kind(v));
                return false;
        }
        conf_mark_duplicates(c, v->items, v->n, 1, "user");
        l = calloc(v->n + 1, sizeof(char *));
        if (!l) {
                c->oom = true;
                return false;
        }
        for (size_t i = 0; i < v->n; i++) {
                const YNode *u = v->items[i];
                const char *s = conf_scalar(c, u, "a user name"), *why;
                char buf[YTREE_SHOW_BUF];

                if (!s || u->skip)
                        continue;
                why = conf_user_name_problem(s, u->len);
                if (why) {
                        error_node(c, u, "\"%s\" %s", ytree_show(s, u->len, buf), why);
                        continue;
                }
                l[m] = strdup(s);
                if (!l[m]) {
                        c->oom = true;
                        return false;
                }
                m++;
        }
        strv_free(*list);
        *list = TAKE_PTR(l);
        return true;
}

void conf_get_cgroup(Ctx *c, const YNode *v, const char *group_path, char **ret) {
        const char *s = conf_scalar(c, v, "true, false or a cgroup path relative to cgroup-root");
        char buf[YTREE_SHOW_BUF];
        char *p;

        if (!s)
                return;
        if (v->plain && strcmp(s, "false") == 0) {
                free(*ret);
                *ret = NULL;
                return;
        }
        if (v->plain && strcmp(s, "true") == 0)
                s = group_path;
        else if (v->plain && is_ambiguous_boolean(s)) {
                error_node(c, v, "\"%s\" is ambiguous: write true, false, or a quoted path", s);
                return;
        } else if (s[0] == '/') {
                error_node(c, v, "\"%s\" must be relative to cgroup-root (no leading /)", ytree_show(s, v->len, buf));
                return;
        } else if (!group_path_valid(s)) {
                error_node(c, v,
                           "\"%s\" is not a valid cgroup path (names of letters, digits, _ . - separated by /, "
                           "at most %d deep and %d bytes)",
                           ytree_show(s, v->len, buf), GROUP_DEPTH_MAX, GROUP_PATH_MAX);
                return;
        }
        p = strdup(s);
        if (!p) {
                c->oom = true;
                return;
        }
        free(*ret);
        *ret = p;
}

const char *conf_placement_to_string(ConfPlacement p) {
        switch (p) {
        case CONF_PLACEMENT_GLOBAL:
                return "global";
        case CONF_PLACEMENT_PARTITIONED:
                return "partitioned";
        default:
                return NULL;
        }
}

/* `reclaim:` takes on or off (YAML's true and false too). */
bool conf_get_on_off(Ctx *c, const YNode *v, void *ret) {
        const char *s = conf_scalar(c, v, "on or off");
        char buf[YTREE_SHOW_BUF];

        if (!s)
                return false;
        if (strcmp(s, "on") == 0 || strcmp(s, "true") == 0)
                *(bool *) ret = true;
        else if (strcmp(s, "off") == 0 || strcmp(s, "false") == 0)
                *(bool *) ret = false;
        else {
                error_node(c, v, "\"%s\" is neither on nor off", ytree_show(s, v->len, buf));
                return false;
        }
        return true;
}

bool conf_get_placement(Ctx *c, const YNode *v, void *ret) {
        const char *s = conf_scalar(c, v, "global or partitioned");
        char buf[YTREE_SHOW_BUF];

        if (!s)
                return false;
        if (strcmp(s, "global") == 0)
                *(ConfPlacement *) ret = CONF_PLACEMENT_GLOBAL;
        else if (strcmp(s, "partitioned") == 0)
                *(ConfPlacement *) ret = CONF_PLACEMENT_PARTITIONED;
        else {
                error_node(c, v, "\"%s\" is not a placement (expected global or partitioned)", ytree_show(s, v->len, buf));
                return false;
        }
        return true;
}

/* A partition's name becomes a cpuset directory (and a word in `edfctl status`): letters, digits,
 * _ . -, not starting with _ . or - (edfd's own directories start with _). */
const char *conf_partition_name_problem(const char *s, size_t len) {
        if (len == 0)
                return "is empty";
        if (len > CONF_PARTITION_NAME_MAX)
                return "is longer than 32 bytes";
        if (s[0] == '_' || s[0] == '.' || s[0] == '-')
                return "must start with a letter or a digit";
        for (size_t i = 0; i < len; i++)
                if (!is_alnum(s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
                        return "may hold only letters, digits, _ . and -";
        return NULL;
}

static const char *cgroup_root_problem(const char *s, size_t len) {
        if (s[0] != '/')
                return "must be an absolute path such as " CONF_CGROUP_ROOT_DEFAULT;
        if (len > CGROUP_ROOT_MAX)
                return "is too long";
        if (len == 1)
                return "must not be / itself";
        if (s[len - 1] == '/')
                return "must not end with /";
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return "contains a control character";
        for (const char *p = s + 1;;) {
                const char *slash = strchr(p, '/');
                size_t n = slash ? (size_t) (slash - p) : strlen(p);

                if (n == 0)
                        return "contains an empty component (//)";
                if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return "must not contain . or .. components";
                if (!slash)
                        return NULL;
                p = slash + 1;
        }
}

/* `reclaim:` of a group: on or off, as the group's own policy. */
bool conf_get_reclaim(Ctx *c, const YNode *v, void *ret) {
        bool on;

        if (!conf_get_on_off(c, v, &on))
                return false;
        *(ReclaimPolicy *) ret = on ? RECLAIM_ON : RECLAIM_OFF;
        return true;
}

bool conf_get_exec_timeout(Ctx *c, const YNode *v, void *ret) {
        char lo[DURATION_MAX], hi[DURATION_MAX];
        uint64_t ns;

        if (!conf_get_duration(c, v, &ns))
                return false;
        if (ns < CONF_EXEC_TIMEOUT_MIN || ns > CONF_EXEC_TIMEOUT_MAX) {
                error_node(c, v, "must be from %s to %s", duration_format(CONF_EXEC_TIMEOUT_MIN, lo),
                           duration_format(CONF_EXEC_TIMEOUT_MAX, hi));
                return false;
        }
        *(uint64_t *) ret = ns;
        return true;
}

bool conf_get_polkit(Ctx *c, const YNode *v, void *ret) {
        const char *s = conf_scalar(c, v, "auto, required or off");
        char buf[YTREE_SHOW_BUF];

        if (!s)
                return false;
        if (polkit_mode_from_string(s) == _POLKIT_MODE_INVALID) {
                error_node(c, v, "\"%s\" is not a polkit mode (expected auto, required or off)",
                           ytree_show(s, v->len, buf));
                return false;
        }
        *(PolkitMode *) ret = polkit_mode_from_string(s);
        return true;
}

bool conf_get_cgroup_root(Ctx *c, const YNode *v, void *ret) {
        const char *s = conf_scalar(c, v, "an absolute path such as " CONF_CGROUP_ROOT_DEFAULT), *why;
        char buf[YTREE_SHOW_BUF], **root = ret, *p;

        if (!s)
                return false;
        why = cgroup_root_problem(s, v->len);
        if (why) {
                error_node(c, v, "\"%s\" %s", ytree_show(s, v->len, buf), why);
                return false;
        }
        p = strdup(s);
        if (!p) {
                c->oom = true;
                return false;
        }
        free(*root);
        *root = p;
        return true;
}

/* A CPU list that names at least one CPU (cpu_mask_parse() may have written part of *ret when not). */
bool conf_get_cpus(Ctx *c, const YNode *v, void *ret) {
        const char *s = conf_scalar(c, v, "a CPU list such as \"1\" or \"2-3\""), *why;
        char buf[YTREE_SHOW_BUF];

        if (!s)
                return false;
        if (cpu_mask_parse(s, v->len, ret, &why) < 0) {
                error_node(c, v, "\"%s\" %s", ytree_show(s, v->len, buf), why);
                return false;
        }
        if (cpu_mask_empty(ret)) {
                error_node(c, v, "names no CPU");
                return false;
        }
        return true;
}

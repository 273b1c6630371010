/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* edfd-oci-hook's pure part: the OCI state, the bundle's config.json and the hook's configuration,
 * parsed from buffers (oci-hook.h). */

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/admission.h"
#include "core/bandwidth.h"
#include "core/duration.h"
#include "core/tree.h"
#include "oci-hook.h"
#include "yaml/yaml-tree.h"

static int fail(char **ret_error, int err, const char *fmt, ...) _printf_(3, 4);
static int fail(char **ret_error, int err, const char *fmt, ...) {
        va_list ap;
        char *m = NULL;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&m, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        if (ret_error)
                *ret_error = m;
        else
                free(m);
        return err;
}

static json_object *parse_json(const char *json, size_t len, const char *what, char **ret_error, int *ret) {
        json_tokener *tok;
        json_object *o;

        if (len > OCI_STATE_MAX || len > INT_MAX) {
                *ret = fail(ret_error, -EINVAL, "%s is larger than %d bytes", what, OCI_STATE_MAX);
                return NULL;
        }
        if (memchr(json, '\0', len)) {
                *ret = fail(ret_error, -EINVAL, "%s holds a NUL byte", what);
                return NULL;
        }
        tok = json_tokener_new();
        if (!tok) {
                *ret = -ENOMEM;
                return NULL;
        }
        o = json_tokener_parse_ex(tok, json, (int) len);
        if (!o || json_tokener_get_error(tok) != json_tokener_success ||
            (size_t) json_tokener_get_parse_end(tok) < len) {
                enum json_tokener_error e = json_tokener_get_error(tok);
                size_t end = json_tokener_get_parse_end(tok);
                bool trailing = o && e == json_tokener_success;

                /* Trailing white space (a newline) after the object is fine. */
                if (trailing && strspn(json + end, " \t\r\n") == len - end) {
                        json_tokener_free(tok);
                        goto ok;
                }
                json_object_put(o);
                *ret = fail(ret_error, -EINVAL, "%s is not JSON: %s", what,
                            trailing ? "text after the object"
                            : e == json_tokener_continue ? "it ends early" : json_tokener_error_desc(e));
                json_tokener_free(tok);
                return NULL;
        }
        json_tokener_free(tok);
ok:
        if (!json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                *ret = fail(ret_error, -EINVAL, "%s is not a JSON object", what);
                return NULL;
        }
        *ret = 0;
        return o;
}

static int get_string(json_object *o, const char *key, bool required, const char *what, char **ret,
                      char **ret_error) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) {
                if (required)
                        return fail(ret_error, -EINVAL, "%s has no \"%s\"", what, key);
                *ret = NULL;
                return 0;
        }
        if (!json_object_is_type(v, json_type_string))
                return fail(ret_error, -EINVAL, "%s: \"%s\" is not a string", what, key);
        *ret = strdup(json_object_get_string(v));
        return *ret ? 0 : -ENOMEM;
}

/* The annotations that mark a pod's sandbox (pause) container, engine by engine. */
static const struct {
        const char *key, *value;
} sandbox_marks[] = {
        { "io.kubernetes.cri-o.ContainerType", "sandbox" }, /* CRI-O */
        { "io.kubernetes.cri.container-type", "sandbox" },  /* containerd's CRI */
        { "io.kubernetes.docker.type", "podsandbox" },      /* dockershim, cri-dockerd */
};

static const char *const known_annotations[] = { "runtime", "period", "deadline", "group", "startup" };

static int parse_duration_annotation(const char *key, const char *value, uint64_t *ret, char **ret_error) {
        const char *reason = NULL;

        if (duration_parse(value, ret, &reason) < 0)
                return fail(ret_error, -EINVAL, "annotation %s%s: \"%s\" %s", OCI_ANNOTATION_PREFIX, key, value,
                            reason);
        if (*ret == 0)
                return fail(ret_error, -EINVAL, "annotation %s%s: \"%s\" must be above 0", OCI_ANNOTATION_PREFIX,
                            key, value);
        return 0;
}

int oci_state_parse(const char *json, size_t len, bool want_params, OciRequest *ret, char **ret_error) {
        OciRequest q = {};
        json_object *o, *v, *ann = NULL;
        const char *runtime = NULL, *period = NULL, *deadline = NULL, *group = NULL, *startup = NULL;
        int r;

        o = parse_json(json, len, "the OCI state on standard input", ret_error, &r);
        if (!o)
                return r;

        r = get_string(o, "id", true, "the OCI state", &q.id, ret_error);
        if (r < 0)
                goto out;
        r = get_string(o, "bundle", false, "the OCI state", &q.bundle, ret_error);
        if (r < 0)
                goto out;
        r = get_string(o, "status", false, "the OCI state", &q.status, ret_error);
        if (r < 0)
                goto out;
        if (json_object_object_get_ex(o, "pid", &v) && !json_object_is_type(v, json_type_null)) {
                int64_t pid;

                errno = 0;
                pid = json_object_get_int64(v);
                if (!json_object_is_type(v, json_type_int) || errno != 0 || pid < 0 || pid > INT_MAX) {
                        r = fail(ret_error, -EINVAL, "the OCI state: \"pid\" is not a process id (%s)",
                                 json_object_to_json_string(v));
                        goto out;
                }
                q.pid = (pid_t) pid;
        }

        if (json_object_object_get_ex(o, "annotations", &ann) && !json_object_is_type(ann, json_type_null)) {
                if (!json_object_is_type(ann, json_type_object)) {
                        r = fail(ret_error, -EINVAL, "the OCI state: \"annotations\" is not an object");
                        goto out;
                }
                json_object_object_foreach(ann, key, val) {
                        const char *s;
                        bool known = false;

                        if (!json_object_is_type(val, json_type_string)) {
                                r = fail(ret_error, -EINVAL, "the OCI state: annotation %s is not a string", key);
                                goto out;
                        }
                        s = json_object_get_string(val);
                        for (size_t i = 0; i < sizeof(sandbox_marks) / sizeof(sandbox_marks[0]); i++)
                                if (strcmp(key, sandbox_marks[i].key) == 0 && strcmp(s, sandbox_marks[i].value) == 0)
                                        q.sandbox = true;
                        if (strncmp(key, OCI_ANNOTATION_PREFIX, strlen(OCI_ANNOTATION_PREFIX)) != 0)
                                continue;
                        const char *name = key + strlen(OCI_ANNOTATION_PREFIX);
                        for (size_t i = 0; i < sizeof(known_annotations) / sizeof(known_annotations[0]); i++)
                                known = known || strcmp(name, known_annotations[i]) == 0;
                        if (!known && !want_params)
                                continue; /* poststop, or the first look for the id: not the place */
                        if (!known) {
                                r = fail(ret_error, -EINVAL,
                                         "unknown annotation %s (edfd knows org.edfd.runtime, org.edfd.period, "
                                         "org.edfd.deadline, org.edfd.group and org.edfd.startup)", key);
                                goto out;
                        }
                        if (strcmp(name, "runtime") == 0)
                                runtime = s;
                        else if (strcmp(name, "period") == 0)
                                period = s;
                        else if (strcmp(name, "deadline") == 0)
                                deadline = s;
                        else if (strcmp(name, "startup") == 0)
                                startup = s;
                        else
                                group = s;
                }
        }

        q.wanted = runtime != NULL;
        if (group) {
                q.group = strdup(group);
                if (!q.group) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        if (q.sandbox || !want_params) {
                r = 0;
                goto out;
        }
        if (!runtime) {
                const char *other = period ? "period" : deadline ? "deadline" : group ? "group" :
                                    startup ? "startup" : NULL;
                if (other)
                        r = fail(ret_error, -EINVAL, "annotation org.edfd.%s without org.edfd.runtime", other);
                else
                        r = 0;
                goto out;
        }
        if (!period) {
                r = fail(ret_error, -EINVAL, "annotation org.edfd.period is missing (org.edfd.runtime needs it)");
                goto out;
        }
        r = parse_duration_annotation("runtime", runtime, &q.runtime, ret_error);
        if (r < 0)
                goto out;
        r = parse_duration_annotation("period", period, &q.period, ret_error);
        if (r < 0)
                goto out;
        if (deadline) {
                r = parse_duration_annotation("deadline", deadline, &q.deadline, ret_error);
                if (r < 0)
                        goto out;
        } else
                q.deadline = q.period;
        q.startup = OCI_STARTUP_DEFAULT_NS;
        if (startup) {
                const char *reason = NULL;
                if (duration_parse(startup, &q.startup, &reason) < 0) {
                        r = fail(ret_error, -EINVAL, "annotation org.edfd.startup: \"%s\" %s", startup, reason);
                        goto out;
                }
                if (q.startup > OCI_STARTUP_MAX_NS) {
                        r = fail(ret_error, -EINVAL, "annotation org.edfd.startup: \"%s\" is above an hour", startup);
                        goto out;
                }
        }
        if (q.runtime > q.deadline) {
                r = fail(ret_error, -EINVAL, "annotation org.edfd.runtime (%s) is above org.edfd.%s (%s)", runtime,
                         deadline ? "deadline" : "period", deadline ? deadline : period);
                goto out;
        }
        if (q.deadline > q.period) {
                r = fail(ret_error, -EINVAL, "annotation org.edfd.deadline (%s) is above org.edfd.period (%s)",
                         deadline, period);
                goto out;
        }
        if (q.pid <= 0) {
                r = fail(ret_error, -EINVAL, "the OCI state has no \"pid\" (the hook runs at createRuntime)");
                goto out;
        }
        r = 0;
out:
        json_object_put(o);
        if (r < 0)
                oci_request_done(&q);
        else
                *ret = q;
        return r;
}

void oci_request_done(OciRequest *r) {
        free(r->id);
        free(r->bundle);
        free(r->status);
        free(r->group);
        *r = (OciRequest) {};
}

int oci_spec_check(const char *json, size_t len, char **ret_error) {
        json_object *o, *proc, *sched, *policy;
        int r;

        o = parse_json(json, len, "the bundle's config.json", ret_error, &r);
        if (!o)
                return r;
        if (json_object_object_get_ex(o, "process", &proc) && json_object_is_type(proc, json_type_object) &&
            json_object_object_get_ex(proc, "scheduler", &sched) && json_object_is_type(sched, json_type_object) &&
            json_object_object_get_ex(sched, "policy", &policy) && json_object_is_type(policy, json_type_string) &&
            strcmp(json_object_get_string(policy), "SCHED_DEADLINE") == 0)
                r = fail(ret_error, -EINVAL,
                         "the container's spec asks for SCHED_DEADLINE in process.scheduler, which bypasses edfd's "
                         "admission: ask through the annotations org.edfd.runtime and org.edfd.period instead "
                         "(edfd-oci-hook(8))");
        json_object_put(o);
        return r;
}

/* --- the hook's configuration --- */

void hook_config_done(HookConfig *c) {
        for (size_t i = 0; i < c->n_groups; i++)
                free(c->groups[i].name);
        free(c->groups);
        free(c->default_group);
        *c = (HookConfig) {};
}

const HookGroup *hook_config_group(const HookConfig *c, const char *name) {
        for (size_t i = 0; i < c->n_groups; i++)
                if (strcmp(c->groups[i].name, name) == 0)
                        return &c->groups[i];
        return NULL;
}

/* The hook's configuration is small: a mapping of two keys, one a mapping of scalars. */
#define HOOK_YAML_NESTING_MAX 8

typedef struct HookParse {
        char **ret_error;
        int r; /* the first problem the reader reported */
} HookParse;

static void hook_yaml_report(void *userdata, YamlProblem kind, unsigned line, unsigned column, const char *keypath,
                             const char *message) {
        HookParse *h = userdata;

        (void) kind, (void) column, (void) keypath;
        if (h->r == 0)
                h->r = line > 0 ? fail(h->ret_error, -EINVAL, "line %u: %s", line, message)
                                : fail(h->ret_error, -EINVAL, "%s", message);
}

static int parse_group(HookConfig *c, const YNode *k, const YNode *v, char **ret_error) {
        const char *name = ytree_text(k), *value = ytree_text(v), *reason = NULL;
        uint64_t runtime, bw;
        HookGroup *n;

        if (!name)
                return fail(ret_error, -EINVAL, "line %u: a group's name must be a plain string", k->line);
        if (!group_path_valid(name) || strcmp(name, "/") == 0)
                return fail(ret_error, -EINVAL, "line %u: \"%s\" is not a group path (names of letters, digits, "
                            "_ . and -, separated by /)", k->line, name);
        if (hook_config_group(c, name))
                return fail(ret_error, -EINVAL, "line %u: group %s is listed twice", k->line, name);
        if (!value)
                return fail(ret_error, -EINVAL, "line %u: group %s: the most one container may ask must be a "
                            "percentage (40%%)", v->line, name);
        if (percent_parse(value, &runtime, &reason) < 0)
                return fail(ret_error, -EINVAL, "line %u: group %s: \"%s\" %s", v->line, name, value, reason);
        if (bw_of(runtime, PERCENT_PERIOD_NS, &bw) < 0 || bw == 0)
                return fail(ret_error, -EINVAL, "line %u: group %s: %s must be above 0%%", v->line, name, value);
        if (bw > BW_UNIT)
                return fail(ret_error, -EINVAL, "line %u: group %s: %s is above 100%% (a container's reservation "
                            "is one thread)", v->line, name, value);
        n = realloc(c->groups, (c->n_groups + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        c->groups = n;
        n[c->n_groups] = (HookGroup) { .name = strdup(name), .max_bw = bw };
        if (!n[c->n_groups].name)
                return -ENOMEM;
        c->n_groups++;
        return 0;
}

static int parse_config(HookConfig *c, const YNode *root, char **ret_error) {
        bool seen_groups = false;
        int r;

        if (!root || ytree_is_null(root))
                return 0; /* an empty document */
        if (root->type != YNODE_MAP)
                return fail(ret_error, -EINVAL, "line %u: unexpected YAML: the configuration must be a mapping "
                            "(default-group:, groups:), not %s", root->line, ytree_kind(root));
        for (size_t i = 0; i + 1 < root->n; i += 2) {
                const YNode *k = root->items[i], *v = root->items[i + 1];
                const char *key = ytree_text(k);

                if (!key)
                        return fail(ret_error, -EINVAL, "line %u: unexpected YAML: a key must be a name, not %s",
                                    k->line, ytree_kind(k));
                if (strcmp(key, "groups") == 0) {
                        if (seen_groups)
                                return fail(ret_error, -EINVAL, "line %u: groups is given twice", k->line);
                        seen_groups = true;
                        if (v->type != YNODE_MAP)
                                return fail(ret_error, -EINVAL, "line %u: groups must be a mapping of group: "
                                            "percentage", v->line);
                        for (size_t j = 0; j + 1 < v->n; j += 2)
                                if ((r = parse_group(c, v->items[j], v->items[j + 1], ret_error)) < 0)
                                        return r;
                } else if (strcmp(key, "default-group") == 0) {
                        if (c->default_group)
                                return fail(ret_error, -EINVAL, "line %u: default-group is given twice", k->line);
                        if (!ytree_text(v))
                                return fail(ret_error, -EINVAL, "line %u: default-group must be a group path",
                                            v->line);
                        c->default_group = strdup(v->value);
                        if (!c->default_group)
                                return -ENOMEM;
                } else
                        return fail(ret_error, -EINVAL, "line %u: unknown key %s (the keys are default-group and "
                                    "groups)", k->line, key);
        }
        return 0;
}

int hook_config_parse(const char *text, size_t len, HookConfig *ret, char **ret_error) {
        const YamlLimits limits = { .nesting_max = HOOK_YAML_NESTING_MAX };
        HookParse h = { .ret_error = ret_error };
        HookConfig c = {};
        YNode *root = NULL;
        int r;

        r = ytree_load(text, len, &limits, hook_yaml_report, &h, &root);
        if (r == -EINVAL && h.r < 0)
                r = h.r;
        else if (r == 0 && h.r < 0)
                r = h.r; /* an anchor, alias or tag: reported, the tree is not read */
        if (r == 0)
                r = parse_config(&c, root, ret_error);
        ytree_free(root);
        if (r == 0 && c.default_group && !hook_config_group(&c, c.default_group))
                r = fail(ret_error, -EINVAL, "default-group %s is not one of groups", c.default_group);
        if (r < 0) {
                hook_config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

int hook_authorize(const HookConfig *c, const OciRequest *r, const char **ret_group, char **ret_error) {
        const char *group = r->group ? r->group : c->default_group;
        const HookGroup *g;
        uint64_t bw;
        char need[DURATION_MAX], most[DURATION_MAX];

        if (!group)
                return fail(ret_error, -EINVAL, "the container names no group (annotation org.edfd.group) and the "
                            "hook's configuration has no default-group");
        g = hook_config_group(c, group);
        if (!g) {
                size_t n = 0;
                char *list = NULL;

                for (size_t i = 0; i < c->n_groups; i++)
                        n += strlen(c->groups[i].name) + 2;
                list = calloc(1, n + 1);
                if (!list)
                        return -ENOMEM;
                for (size_t i = 0; i < c->n_groups; i++) {
                        if (i > 0)
                                strcat(list, ", ");
                        strcat(list, c->groups[i].name);
                }
                int e = fail(ret_error, -EACCES, "group %s is not open to containers (the hook's configuration "
                             "opens %s%s)", group, c->n_groups ? "" : "none", list);
                free(list);
                return e;
        }
        if (bw_of(r->runtime, r->period, &bw) < 0)
                return fail(ret_error, -EINVAL, "the annotated runtime and period make no bandwidth");
        if (bw > g->max_bw)
                return fail(ret_error, -EACCES, "the container asks %s in group %s; one container may have at most %s "
                            "there (the hook's configuration)", bw_format_up(bw, need), group,
                            bw_format(g->max_bw, most));
        *ret_group = group;
        return 0;
}

int hook_container_group(const char *group, const char *id, char **ret_path, char **ret_error) {
        const char *why = admission_group_name_problem(id, strlen(id));
        char *path;

        if (why)
                return fail(ret_error, -EINVAL, "container id \"%s\" cannot name an edfd group: it %s", id, why);
        if (asprintf(&path, "%s/%s", group, id) < 0)
                return -ENOMEM;
        if (!group_path_valid(path)) {
                int e = fail(ret_error, -EINVAL, "group %s/%s is too long or too deep for edfd", group, id);
                free(path);
                return e;
        }
        *ret_path = path;
        return 0;
}

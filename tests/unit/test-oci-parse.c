/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* edfd-oci-hook's parsers (oci/oci-hook.h): the OCI state and its annotations, the bundle's
 * config.json, the hook's configuration and the decision made from them, each refusal by the
 * words of its message. */

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bandwidth.h"
#include "oci-hook.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static char *state(const char *annotations) {
        char *s;

        cr_assert(asprintf(&s,
                           "{\"ociVersion\":\"1.0.2\",\"id\":\"" ID "\",\"status\":\"creating\",\"pid\":4242,"
                           "\"bundle\":\"/run/b\",\"annotations\":{%s}}\n",
                           annotations) > 0);
        return s;
}

static OciRequest parse_ok(const char *annotations, bool want) {
        OciRequest q = {};
        char *why = NULL, *s = state(annotations);
        int r = oci_state_parse(s, strlen(s), want, &q, &why);

        cr_assert_eq(r, 0, "%s: %d %s", annotations, r, why ? why : "");
        free(s);
        return q;
}

static void parse_bad(const char *text, const char *words) {
        OciRequest q = { .pid = 77 };
        char *why = NULL;
        int r = oci_state_parse(text, strlen(text), true, &q, &why);

        cr_assert_eq(r, -EINVAL, "%s: r=%d", text, r);
        cr_assert(why && strstr(why, words), "%s: \"%s\" should mention \"%s\"", text, why ? why : "(null)", words);
        cr_assert_eq(q.pid, 77, "a refusal leaves the result untouched");
        free(why);
}

static void annotations_bad(const char *annotations, const char *words) {
        char *s = state(annotations);
        parse_bad(s, words);
        free(s);
}

Test(oci_state, full_request) {
        OciRequest q = parse_ok("\"org.edfd.runtime\":\"2ms\",\"org.edfd.period\":\"10ms\","
                                "\"org.edfd.deadline\":\"5ms\",\"org.edfd.group\":\"containers\",\"other\":\"x\"",
                                true);
        cr_assert_str_eq(q.id, ID);
        cr_assert_eq(q.pid, 4242);
        cr_assert_str_eq(q.bundle, "/run/b");
        cr_assert_str_eq(q.status, "creating");
        cr_assert(q.wanted && !q.sandbox);
        cr_assert_eq(q.runtime, 2000000);
        cr_assert_eq(q.deadline, 5000000);
        cr_assert_eq(q.period, 10000000);
        cr_assert_str_eq(q.group, "containers");
        oci_request_done(&q);
}

Test(oci_state, deadline_defaults_to_period_and_group_to_none) {
        OciRequest q = parse_ok("\"org.edfd.runtime\":\"1.5ms\",\"org.edfd.period\":\"20ms\"", true);
        cr_assert_eq(q.deadline, 20000000);
        cr_assert_null(q.group);
        oci_request_done(&q);
}

Test(oci_state, startup_bound) {
        OciRequest q = parse_ok("\"org.edfd.runtime\":\"1ms\",\"org.edfd.period\":\"10ms\"", true);
        cr_assert_eq(q.startup, OCI_STARTUP_DEFAULT_NS, "1 s when absent");
        oci_request_done(&q);
        q = parse_ok("\"org.edfd.runtime\":\"1ms\",\"org.edfd.period\":\"10ms\",\"org.edfd.startup\":\"0s\"", true);
        cr_assert_eq(q.startup, 0, "0s: at createRuntime");
        oci_request_done(&q);
        q = parse_ok("\"org.edfd.runtime\":\"1ms\",\"org.edfd.period\":\"10ms\",\"org.edfd.startup\":\"2.5s\"", true);
        cr_assert_eq(q.startup, 2500000000);
        oci_request_done(&q);
        annotations_bad("\"org.edfd.runtime\":\"1ms\",\"org.edfd.period\":\"10ms\",\"org.edfd.startup\":\"2\"",
                        "org.edfd.startup: \"2\" has no unit");
        annotations_bad("\"org.edfd.runtime\":\"1ms\",\"org.edfd.period\":\"10ms\",\"org.edfd.startup\":\"3601s\"",
                        "is above an hour");
        annotations_bad("\"org.edfd.startup\":\"1s\"", "org.edfd.startup without org.edfd.runtime");
}

Test(oci_state, nothing_asked) {
        OciRequest q = parse_ok("\"io.podman.annotations.autoremove\":\"TRUE\"", true);
        cr_assert(!q.wanted);
        oci_request_done(&q);
}

Test(oci_state, sandbox_is_left_alone_even_with_bad_annotations) {
        const char *marks[] = {
                "\"io.kubernetes.cri-o.ContainerType\":\"sandbox\"",
                "\"io.kubernetes.cri.container-type\":\"sandbox\"",
                "\"io.kubernetes.docker.type\":\"podsandbox\"",
        };
        for (size_t i = 0; i < 3; i++) {
                char buf[256];
                snprintf(buf, sizeof buf, "%s,\"org.edfd.runtime\":\"2\",\"org.edfd.period\":\"10ms\"", marks[i]);
                OciRequest q = parse_ok(buf, true);
                cr_assert(q.sandbox, "%s", marks[i]);
                oci_request_done(&q);
        }
        OciRequest q = parse_ok("\"io.kubernetes.cri-o.ContainerType\":\"container\",\"org.edfd.runtime\":\"2ms\","
                                "\"org.edfd.period\":\"10ms\"", true);
        cr_assert(!q.sandbox && q.wanted);
        oci_request_done(&q);
}

Test(oci_state, poststop_needs_no_parameters) {
        /* At poststop the process is gone and the parameters are not read: only id and group. */
        const char *s = "{\"id\":\"abc\",\"status\":\"stopped\",\"annotations\":{\"org.edfd.runtime\":\"junk\","
                        "\"org.edfd.group\":\"g\",\"org.edfd.typo\":\"1\"}}";
        OciRequest q = {};
        char *why = NULL;
        cr_assert_eq(oci_state_parse(s, strlen(s), false, &q, &why), 0, "%s", why ? why : "");
        cr_assert(q.wanted);
        cr_assert_str_eq(q.group, "g");
        cr_assert_eq(q.pid, 0);
        oci_request_done(&q);
}

Test(oci_state, bad_annotations) {
        annotations_bad("\"org.edfd.runtime\":\"2\",\"org.edfd.period\":\"10ms\"", "org.edfd.runtime: \"2\" has no unit");
        annotations_bad("\"org.edfd.runtime\":\"2ms\",\"org.edfd.period\":\"10\"", "org.edfd.period: \"10\" has no unit");
        annotations_bad("\"org.edfd.runtime\":\"12ms\",\"org.edfd.period\":\"10ms\"",
                        "org.edfd.runtime (12ms) is above org.edfd.period (10ms)");
        annotations_bad("\"org.edfd.runtime\":\"2ms\",\"org.edfd.period\":\"10ms\",\"org.edfd.deadline\":\"1ms\"",
                        "org.edfd.runtime (2ms) is above org.edfd.deadline (1ms)");
        annotations_bad("\"org.edfd.runtime\":\"2ms\",\"org.edfd.period\":\"10ms\",\"org.edfd.deadline\":\"20ms\"",
                        "org.edfd.deadline (20ms) is above org.edfd.period (10ms)");
        annotations_bad("\"org.edfd.runtime\":\"0ms\",\"org.edfd.period\":\"10ms\"", "must be above 0");
        annotations_bad("\"org.edfd.runtime\":\"2ms\"", "org.edfd.period is missing");
        annotations_bad("\"org.edfd.period\":\"10ms\"", "org.edfd.period without org.edfd.runtime");
        annotations_bad("\"org.edfd.group\":\"g\"", "org.edfd.group without org.edfd.runtime");
        annotations_bad("\"org.edfd.runtime\":\"2ms\",\"org.edfd.perod\":\"10ms\"", "unknown annotation org.edfd.perod");
        annotations_bad("\"org.edfd.runtime\":2", "annotation org.edfd.runtime is not a string");
        annotations_bad("\"org.edfd.runtime\":\"-2ms\",\"org.edfd.period\":\"10ms\"", "is negative");
        annotations_bad("\"org.edfd.runtime\":\"99999999999999999999ms\",\"org.edfd.period\":\"10ms\"", "too large");
}

Test(oci_state, bad_state) {
        parse_bad("", "not JSON");
        parse_bad("{\"id\":", "not JSON");
        parse_bad("[1,2]", "not a JSON object");
        parse_bad("{\"id\":\"a\"} x", "not JSON");
        parse_bad("{\"pid\":1}", "has no \"id\"");
        parse_bad("{\"id\":7}", "\"id\" is not a string");
        parse_bad("{\"id\":\"a\",\"pid\":-1}", "\"pid\" is not a process id");
        parse_bad("{\"id\":\"a\",\"pid\":99999999999}", "\"pid\" is not a process id");
        parse_bad("{\"id\":\"a\",\"pid\":\"1\"}", "\"pid\" is not a process id");
        parse_bad("{\"id\":\"a\",\"annotations\":[]}", "\"annotations\" is not an object");
        parse_bad("{\"id\":\"a\",\"annotations\":{\"org.edfd.runtime\":\"2ms\",\"org.edfd.period\":\"10ms\"}}",
                  "has no \"pid\"");
        const char nul[] = "{\"id\":\"a\"}\0";
        OciRequest q = {};
        char *why = NULL;
        cr_assert_eq(oci_state_parse(nul, sizeof nul - 1, true, &q, &why), -EINVAL);
        cr_assert(strstr(why, "NUL"), "%s", why);
        free(why);
}

Test(oci_state, too_large) {
        size_t n = OCI_STATE_MAX + 1;
        char *big = malloc(n);
        OciRequest q = {};
        char *why = NULL;
        memset(big, ' ', n);
        cr_assert_eq(oci_state_parse(big, n, true, &q, &why), -EINVAL);
        cr_assert(strstr(why, "larger than"), "%s", why);
        free(why);
        free(big);
}

Test(oci_spec, scheduler) {
        const char *ok[] = {
                "{\"process\":{\"args\":[\"sh\"]}}",
                "{\"process\":{\"scheduler\":{\"policy\":\"SCHED_OTHER\",\"nice\":5}}}",
                "{}",
        };
        for (size_t i = 0; i < 3; i++) {
                char *why = NULL;
                cr_assert_eq(oci_spec_check(ok[i], strlen(ok[i]), &why), 0, "%s: %s", ok[i], why ? why : "");
        }
        const char *dl = "{\"process\":{\"scheduler\":{\"policy\":\"SCHED_DEADLINE\",\"runtime\":1000000,"
                         "\"deadline\":10000000,\"period\":10000000}}}";
        char *why = NULL;
        cr_assert_eq(oci_spec_check(dl, strlen(dl), &why), -EINVAL);
        cr_assert(strstr(why, "SCHED_DEADLINE in process.scheduler") && strstr(why, "org.edfd.runtime"), "%s", why);
        free(why);
        why = NULL;
        cr_assert_eq(oci_spec_check("{", 1, &why), -EINVAL);
        cr_assert(strstr(why, "config.json is not JSON"), "%s", why);
        free(why);
}

static HookConfig config_ok(const char *text) {
        HookConfig c = {};
        char *why = NULL;
        int r = hook_config_parse(text, strlen(text), &c, &why);
        cr_assert_eq(r, 0, "%s: %s", text, why ? why : "");
        return c;
}

static void config_bad(const char *text, const char *words) {
        HookConfig c = { .n_groups = 99 };
        char *why = NULL;
        int r = hook_config_parse(text, strlen(text), &c, &why);
        cr_assert_eq(r, -EINVAL, "%s: r=%d", text, r);
        cr_assert(why && strstr(why, words), "%s: \"%s\" should mention \"%s\"", text, why ? why : "(null)", words);
        cr_assert_eq(c.n_groups, 99, "a refusal leaves the result untouched");
        free(why);
}

Test(hook_config, good) {
        HookConfig c = config_ok("# comment\ndefault-group: containers\ngroups:\n  containers: 40%\n  media/video: 12.5%\n");
        cr_assert_str_eq(c.default_group, "containers");
        cr_assert_eq(c.n_groups, 2);
        cr_assert_eq(hook_config_group(&c, "containers")->max_bw, 2 * BW_UNIT / 5);
        cr_assert_eq(hook_config_group(&c, "media/video")->max_bw, BW_UNIT / 8);
        cr_assert_null(hook_config_group(&c, "audio"));
        hook_config_done(&c);

        /* As shipped: only comments. Nothing is open. */
        c = config_ok("# default-group: containers\n# groups:\n#   containers: 40%\n");
        cr_assert_eq(c.n_groups, 0);
        cr_assert_null(c.default_group);
        hook_config_done(&c);
        c = config_ok("");
        cr_assert_eq(c.n_groups, 0);
        hook_config_done(&c);
}

Test(hook_config, bad) {
        config_bad("groups:\n  containers: 40\n", "line 2: group containers: \"40\"");
        config_bad("groups:\n  containers: 0%\n", "must be above 0%");
        config_bad("groups:\n  containers: 150%\n", "above 100%");
        config_bad("groups:\n  containers: 40%\n  containers: 20%\n", "line 3: group containers is listed twice");
        config_bad("groups:\n  \"bad name\": 40%\n", "is not a group path");
        config_bad("groups:\n  /: 40%\n", "is not a group path");
        config_bad("groups: [a, b]\n", "groups must be a mapping");
        config_bad("groups:\n  c: [1]\n", "must be a percentage");
        config_bad("default-group: x\ngroups:\n  c: 10%\n", "default-group x is not one of groups");
        config_bad("defaultgroup: c\n", "line 1: unknown key defaultgroup");
        config_bad("- a\n- b\n", "unexpected YAML");
        config_bad("just text\n", "must be a mapping");
        config_bad("groups:\n  c: 10%\n x: [\n", "line");
        config_bad("default-group: [a]\n", "default-group must be a group path");
}

static OciRequest request(const char *group, uint64_t runtime, uint64_t period) {
        return (OciRequest) { .id = (char *) ID, .wanted = true, .runtime = runtime, .deadline = period,
                              .period = period, .group = (char *) group };
}

Test(hook_authorize, decisions) {
        HookConfig c = config_ok("default-group: containers\ngroups:\n  containers: 40%\n  audio: 10%\n");
        const char *g = NULL;
        char *why = NULL;
        OciRequest q = request(NULL, 4000000, 10000000);

        cr_assert_eq(hook_authorize(&c, &q, &g, &why), 0);
        cr_assert_str_eq(g, "containers");
        q = request("audio", 1000000, 10000000);
        cr_assert_eq(hook_authorize(&c, &q, &g, &why), 0);
        cr_assert_str_eq(g, "audio");

        q = request("audio", 2000000, 10000000);
        cr_assert_eq(hook_authorize(&c, &q, &g, &why), -EACCES);
        cr_assert(strstr(why, "asks 20% in group audio; one container may have at most 10%"), "%s", why);
        free(why);
        q = request("system", 1000000, 10000000);
        cr_assert_eq(hook_authorize(&c, &q, &g, &why), -EACCES);
        cr_assert(strstr(why, "group system is not open to containers (the hook's configuration opens containers, audio)"),
                  "%s", why);
        free(why);
        hook_config_done(&c);

        c = config_ok("");
        q = request("containers", 1000000, 10000000);
        cr_assert_eq(hook_authorize(&c, &q, &g, &why), -EACCES);
        cr_assert(strstr(why, "opens none"), "%s", why);
        free(why);
        q = request(NULL, 1000000, 10000000);
        cr_assert_eq(hook_authorize(&c, &q, &g, &why), -EINVAL);
        cr_assert(strstr(why, "names no group"), "%s", why);
        free(why);
        hook_config_done(&c);
}

Test(hook_container_group, paths) {
        char *p = NULL, *why = NULL;

        cr_assert_eq(hook_container_group("containers", ID, &p, &why), 0);
        cr_assert_str_eq(p, "containers/" ID);
        free(p);
        cr_assert_eq(hook_container_group("containers", "my ctr", &p, &why), -EINVAL);
        cr_assert(strstr(why, "container id \"my ctr\" cannot name an edfd group: it may hold only"), "%s", why);
        free(why);
        cr_assert_eq(hook_container_group("containers", ID "0", &p, &why), -EINVAL);
        cr_assert(strstr(why, "longer than 64"), "%s", why);
        free(why);
}

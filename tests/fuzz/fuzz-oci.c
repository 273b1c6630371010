/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for edfd-oci-hook's parsers (oci/oci-hook.h): the OCI state (both modes), the
 * bundle's config.json and the hook's configuration, fed the same bytes.
 *
 * Checks, for every input:
 * - a refusal is -EINVAL (or -ENOMEM) with a non-empty message, and leaves the result untouched;
 * - an accepted request that asks for a reservation has 0 < runtime <= deadline <= period and a
 *   process id, and the parse without parameters agrees on the id, the group and what is asked;
 * - an accepted configuration's groups each have 0 < max <= one CPU, and its default group is one
 *   of them. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bandwidth.h"
#include "oci-hook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what) {
        if (!ok) {
                fprintf(stderr, "fuzz-oci: %s\n", what);
                abort();
        }
}

static void refused(int r, char *why) {
        check(r == -EINVAL || r == -ENOMEM, "a refusal is -EINVAL or -ENOMEM");
        check(r == -ENOMEM || (why && *why), "a refusal has a message");
        free(why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *s = (const char *) data;
        OciRequest q = { .pid = 12345 }, p = { .pid = 12345 };
        HookConfig c = { .n_groups = 777 };
        char *why = NULL;
        int r, r2;

        r = oci_state_parse(s, size, true, &q, &why);
        if (r < 0) {
                refused(r, why);
                check(q.pid == 12345 && !q.id, "a refused state leaves the result untouched");
        } else {
                check(q.id != NULL, "an accepted state has an id");
                if (q.wanted && !q.sandbox)
                        check(q.runtime > 0 && q.runtime <= q.deadline && q.deadline <= q.period && q.pid > 0,
                              "an accepted request has 0 < runtime <= deadline <= period and a pid");
                why = NULL;
                r2 = oci_state_parse(s, size, false, &p, &why);
                check(r2 == 0, "what parses with parameters parses without");
                check(strcmp(p.id, q.id) == 0 && p.wanted == q.wanted && p.sandbox == q.sandbox &&
                      (p.group == NULL) == (q.group == NULL) && (!p.group || strcmp(p.group, q.group) == 0),
                      "both parses agree on id, group and what is asked");
                oci_request_done(&p);
                oci_request_done(&q);
        }

        why = NULL;
        r = oci_spec_check(s, size, &why);
        if (r < 0)
                refused(r, why);

        why = NULL;
        r = hook_config_parse(s, size, &c, &why);
        if (r < 0) {
                refused(r, why);
                check(c.n_groups == 777, "a refused configuration leaves the result untouched");
        } else {
                for (size_t i = 0; i < c.n_groups; i++)
                        check(c.groups[i].max_bw > 0 && c.groups[i].max_bw <= BW_UNIT, "0 < max <= one CPU");
                check(!c.default_group || hook_config_group(&c, c.default_group), "the default group is listed");
                hook_config_done(&c);
        }
        return 0;
}

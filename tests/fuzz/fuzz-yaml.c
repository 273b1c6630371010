/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the one YAML reader (lib/yaml/yaml-tree.h) that the configuration, the plan
 * files and the OCI hook's configuration are read with (fuzz-conf, fuzz-plan and fuzz-oci drive it
 * through their schemas; this one checks the reader's own promises), over arbitrary bytes.
 *
 * The input is copied into a heap block of exactly its size (no NUL after it), so that ASan catches
 * any read past the end. Checked besides the sanitizers, for every input:
 * - the load returns 0, -EINVAL or -ENOMEM; every report has a message and a key path; -EINVAL
 *   comes after a report that stopped the load (syntax, format or a limit), 0 after only anchors,
 *   aliases and tags;
 * - a loaded tree is no deeper than its nesting limit and holds no more nodes than its node limit;
 *   a mapping holds pairs; every node has a position within the input, in document order; a scalar
 *   is NUL-terminated at its length; only an alias is broken;
 * - the limits decide alone: the same bytes under tight limits (4 deep, 32 nodes) load exactly when
 *   the loose load's tree fits them, and a refusal then names the limit. */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yaml/yaml-tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what) {
        if (!ok) {
                fprintf(stderr, "fuzz-yaml: %s\n", what);
                abort();
        }
}

typedef struct Seen {
        size_t n;
        YamlProblem last;
        bool stopping; /* a report of a kind that stops the load */
} Seen;

static void report(void *userdata, YamlProblem kind, unsigned line, unsigned column, const char *keypath,
                   const char *message) {
        Seen *s = userdata;

        (void) line, (void) column;
        check(keypath != NULL && message != NULL && message[0] != '\0', "a report has a key path and words");
        check(kind == YAML_PROBLEM_SYNTAX || kind == YAML_PROBLEM_REFUSED || kind == YAML_PROBLEM_FORMAT ||
              kind == YAML_PROBLEM_LIMIT, "a report has a kind");
        check(!s->stopping, "nothing is reported after what stopped the load");
        s->n++;
        s->last = kind;
        s->stopping = kind != YAML_PROBLEM_REFUSED;
}

typedef struct Walk {
        size_t max_line;
        unsigned line, column; /* the last position, for document order */
        size_t nodes, depth;
} Walk;

static void walk(Walk *w, const YNode *n, size_t depth) {
        check(n->line >= 1 && n->column >= 1 && n->line <= w->max_line, "a position within the input");
        check(n->line > w->line || (n->line == w->line && n->column >= w->column), "positions in document order");
        w->line = n->line, w->column = n->column;
        w->nodes++;
        if (n->type == YNODE_SCALAR) {
                check(n->value[n->len] == '\0' && n->n == 0, "a scalar is its text");
                check(!n->broken || n->len == 0, "only an (empty) alias is broken");
                return;
        }
        check(!n->broken, "a collection is never broken");
        check(n->type == YNODE_SEQ || n->n % 2 == 0, "a mapping holds pairs");
        if (depth + 1 > w->depth)
                w->depth = depth + 1;
        for (size_t i = 0; i < n->n; i++)
                walk(w, n->items[i], depth + 1);
}

static int load(const char *buf, size_t size, size_t nesting, size_t nodes, Seen *seen, YNode **ret) {
        const YamlLimits limits = { .nesting_max = nesting, .nodes_max = nodes };
        int r;

        *seen = (Seen) {};
        r = ytree_load(buf, size, &limits, report, seen, ret);
        check(r == 0 || r == -EINVAL || r == -ENOMEM, "0, -EINVAL or -ENOMEM");
        check(r != -EINVAL || (seen->n > 0 && seen->stopping), "-EINVAL after a report that stopped the load");
        check(r != 0 || !seen->stopping, "0 after anchors, aliases and tags only");
        return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf = malloc(size ? size : 1);
        YNode *root = NULL, *tight = NULL;
        Walk w = { .max_line = size + 1 };
        Seen seen, seen_tight;
        int r, rt;

        if (!buf)
                return 0;
        memcpy(buf, data, size);
        r = load(buf, size, 64, 0, &seen, &root);
        if (r == 0 && root)
                walk(&w, root, 0);
        check(w.depth <= 64, "no deeper than the limit");

        rt = load(buf, size, 4, 32, &seen_tight, &tight);
        if (r == 0) {
                bool fits = w.depth <= 4 && w.nodes <= 32;

                check(fits ? rt == 0 || rt == -ENOMEM : rt == -EINVAL || rt == -ENOMEM,
                      "the tight limits load exactly the trees that fit them");
                check(fits || rt != -EINVAL || seen_tight.last == YAML_PROBLEM_LIMIT, "a refusal names the limit");
        }
        if (rt == 0 && tight) {
                Walk t = { .max_line = size + 1 };

                walk(&t, tight, 0);
                check(t.depth <= 4 && t.nodes <= 32, "the tight tree keeps the tight limits");
                check(r != 0 || (t.depth == w.depth && t.nodes == w.nodes), "the two loads agree");
        }
        ytree_free(tight);
        ytree_free(root);
        free(buf);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one YAML reader (lib/yaml/yaml-tree.h) on its own: the tree and its positions, the dialect
 * (one UTF-8 document, no anchors, aliases or tags), the limits, and the words of its reports.
 * Its three users' own tests (test-conf, test-plan, test-oci-parse) check what each makes of it. */

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "yaml/yaml-tree.h"

typedef struct Reports {
        size_t n;
        YamlProblem kind[8];
        char line[8][512]; /* "LINE:COLUMN KEYPATH| message" */
} Reports;

static void collect(void *userdata, YamlProblem kind, unsigned line, unsigned column, const char *keypath,
                    const char *message) {
        Reports *r = userdata;

        cr_assert_not_null(keypath);
        cr_assert(message && *message, "a report has words");
        if (r->n < 8) {
                r->kind[r->n] = kind;
                snprintf(r->line[r->n], sizeof r->line[r->n], "%u:%u %s| %s", line, column, keypath, message);
        }
        r->n++;
}

static int load_len(const char *text, size_t len, size_t nesting, size_t nodes, Reports *reports, YNode **ret) {
        const YamlLimits limits = { .nesting_max = nesting, .nodes_max = nodes };

        *reports = (Reports) {};
        return ytree_load(text, len, &limits, collect, reports, ret);
}

static int load(const char *text, size_t nesting, size_t nodes, Reports *reports, YNode **ret) {
        return load_len(text, text ? strlen(text) : 0, nesting, nodes, reports, ret);
}

/* Loads text[0..len), expecting it refused with one report. */
static void refused_len(const char *text, size_t len, size_t nesting, size_t nodes, YamlProblem kind,
                        const char *want) {
        YNode *root = (YNode *) 0x1;
        Reports r;

        cr_assert_eq(load_len(text, len, nesting, nodes, &r, &root), -EINVAL, "%s: loaded", text);
        cr_assert_eq(root, (YNode *) 0x1, "a refusal leaves the root untouched");
        cr_assert_eq(r.n, 1, "%s: %zu reports (%s)", text, r.n, r.line[0]);
        cr_assert_eq(r.kind[0], kind, "%s: kind %d", text, r.kind[0]);
        cr_assert_str_eq(r.line[0], want);
}

static void refused(const char *text, size_t nesting, size_t nodes, YamlProblem kind, const char *want) {
        refused_len(text, strlen(text), nesting, nodes, kind, want);
}

Test(yaml_tree, nodes_and_positions) {
        YNode *root = NULL, *a, *seq;
        Reports r;

        cr_assert_eq(load("a:\n  b: 'x y'\n  c: [1, ~]\nd: \"\"\n", 8, 0, &r, &root), 0);
        cr_assert_eq(r.n, 0);
        cr_assert_eq(root->type, YNODE_MAP);
        cr_assert_eq(root->n, 4, "two keys, two values");
        cr_assert_str_eq(root->items[0]->value, "a");
        a = root->items[1];
        cr_assert_eq(a->type, YNODE_MAP);
        cr_assert_eq(a->line, 2);
        cr_assert_eq(a->column, 3);
        cr_assert_str_eq(a->items[1]->value, "x y");
        cr_assert_not(a->items[1]->plain, "a quoted scalar is not plain");
        cr_assert_not(ytree_is_null(a->items[1]));
        seq = a->items[3];
        cr_assert_eq(seq->type, YNODE_SEQ);
        cr_assert_eq(seq->n, 2);
        cr_assert_eq(seq->items[1]->line, 3);
        cr_assert_eq(seq->items[1]->column, 10);
        cr_assert(ytree_is_null(seq->items[1]), "~ is null");
        cr_assert_not(ytree_is_null(root->items[3]), "a quoted empty string is a value");
        cr_assert_str_eq(ytree_kind(seq), "a sequence");
        cr_assert_str_eq(ytree_kind(a), "a mapping");
        cr_assert_str_eq(ytree_kind(root->items[0]), "a single value");
        ytree_free(root);

        /* Nothing at all, comments only, or no buffer: no root. */
        root = (YNode *) 0x1;
        cr_assert_eq(load("# just a comment\n", 8, 0, &r, &root), 0);
        cr_assert_null(root);
        root = (YNode *) 0x1;
        cr_assert_eq(load(NULL, 8, 0, &r, &root), 0);
        cr_assert_null(root);
}

Test(yaml_tree, text_with_a_nul) {
        YNode *root = NULL;
        Reports r;

        cr_assert_eq(load("a: \"x\\0y\"\n", 8, 0, &r, &root), 0);
        cr_assert_eq(root->items[1]->len, 3);
        cr_assert_null(ytree_text(root->items[1]), "a scalar that holds a NUL has no C text");
        cr_assert_str_eq(ytree_text(root->items[0]), "a");
        cr_assert_null(ytree_text(root), "a mapping has no text");
        ytree_free(root);
}

Test(yaml_tree, anchors_aliases_and_tags_are_reported_and_the_load_goes_on) {
        YNode *root = NULL;
        Reports r;

        cr_assert_eq(load("a: &x 1\nb:\n  c: *x\nd: !!str 2\n", 8, 0, &r, &root), 0);
        cr_assert_eq(r.n, 3);
        for (size_t i = 0; i < 3; i++)
                cr_assert_eq(r.kind[i], YAML_PROBLEM_REFUSED);
        cr_assert_str_eq(r.line[0], "1:4 a| anchors (&x) are not supported: write each value out in full");
        cr_assert_str_eq(r.line[1], "3:6 b.c| aliases (*x) are not supported: write the value out in full");
        cr_assert_str_eq(r.line[2], "4:4 d| tags (tag:yaml.org,2002:str) are not supported: quote a value to make it a string");
        cr_assert(root->items[3]->items[1]->broken, "the alias is a broken node");
        ytree_free(root);
}

Test(yaml_tree, one_utf8_document) {
        refused("a: 1\n---\nb: 2\n", 8, 0, YAML_PROBLEM_FORMAT,
                "2:1 | a second YAML document: only one is read; remove this \"---\" and merge what follows into the "
                "first");
        refused_len("\xff\xfe" "a\0:\0 \0" "1\0", 10, 8, 0, YAML_PROBLEM_FORMAT,
                    "0:0 | the file must be UTF-8 text, not UTF-16");
        refused("a: \xc3\n", 8, 0, YAML_PROBLEM_SYNTAX,
                "1:5 | invalid trailing UTF-8 octet (byte 0x0a): the file must be UTF-8 text");
}

Test(yaml_tree, syntax_errors_in_words_with_the_key_path) {
        refused("a:\n  b: \"open\n", 8, 0, YAML_PROBLEM_SYNTAX,
                "2:6 a.b| unterminated quoted string: the file ends before its closing quote");
        refused("a:\n\tb: 1\n", 8, 0, YAML_PROBLEM_SYNTAX, "2:1 a| a tab character: YAML indents with spaces only");
        refused("a: [1, 2\n", 8, 0, YAML_PROBLEM_SYNTAX,
                "2:1 a| did not find expected ',' or ']', while parsing a flow sequence at 1:4");
}

Test(yaml_tree, limits) {
        YNode *root = NULL;
        Reports r;

        /* Eight deep is allowed, the ninth is refused where it opens. */
        cr_assert_eq(load("[[[[[[[[1]]]]]]]]", 8, 0, &r, &root), 0);
        ytree_free(root);
        refused("[[[[[[[[[1]]]]]]]]]", 8, 0, YAML_PROBLEM_LIMIT, "1:9 | nested deeper than 8 levels");
        refused("a:\n  b: [[1]]\n", 3, 0, YAML_PROBLEM_LIMIT, "2:7 a.b| nested deeper than 3 levels");
        /* A mapping of two pairs is five nodes. */
        cr_assert_eq(load("{a: 1, b: 2}", 8, 5, &r, &root), 0);
        ytree_free(root);
        refused("{a: 1, b: 2, c: 3}", 8, 5, YAML_PROBLEM_LIMIT, "1:14 | holds more than 5 values");
        /* The rest of a deep input is never parsed (libyaml looks ahead only as far as a key could
         * reach: to the end of its line): a syntax error after the limit is not seen. */
        refused("[[[[[[[[[1,\n 2, \"unterminated", 8, 0, YAML_PROBLEM_LIMIT, "1:9 | nested deeper than 8 levels");
}

Test(yaml_tree, show_and_keypath) {
        char buf[YTREE_SHOW_BUF], path[64], longer[200];
        const char *parts[] = { "groups", "a.b", "x\"y" };

        cr_assert_str_eq(ytree_show("a\"b\\c\n\t\x01", 8, buf), "a\\\"b\\\\c\\n\\t\\x01");
        memset(longer, 'x', sizeof longer);
        longer[YTREE_SHOW_MAX - 1] = '\xc3', longer[YTREE_SHOW_MAX] = '\xa9'; /* an é across the cut */
        ytree_show(longer, sizeof longer, buf);
        cr_assert_eq(strlen(buf), YTREE_SHOW_MAX - 1 + 3, "cut before the character, then ...: %s", buf);
        cr_assert_str_eq(buf + YTREE_SHOW_MAX - 1, "...");
        ytree_keypath(parts, 3, path, sizeof path);
        cr_assert_str_eq(path, "groups.a.b.x\\\"y");
        ytree_keypath(parts, 3, path, 8);
        cr_assert_str_eq(path, "groups.");
        ytree_keypath(parts, 0, path, sizeof path);
        cr_assert_str_eq(path, "");
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Shared output helpers: a small aligned table (header first, widths from the widest cell,
 * columns separated by two spaces, no trailing blanks) and signed bandwidth formatting. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "basic/escape.h"
#include "core/bandwidth.h"
#include "core/duration.h"
#include "edfctl.h"

struct Table {
        size_t n_columns;
        char **cells;         /* row-major */
        size_t n_cells, n_allocated;
        bool *right, *hidden;
        size_t *widths;       /* computed by table_print_row(), reset by table_add() */
        size_t separator;     /* blanks between columns */
        bool widths_valid;
};

Table *table_new(size_t n_columns) {
        Table *t = calloc(1, sizeof *t);

        if (!t)
                return NULL;
        t->n_columns = n_columns;
        t->separator = 2;
        t->right = calloc(n_columns, sizeof *t->right);
        t->hidden = calloc(n_columns, sizeof *t->hidden);
        t->widths = calloc(n_columns, sizeof *t->widths);
        if (!t->right || !t->hidden || !t->widths)
                return table_free(t);
        return t;
}

Table *table_free(Table *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_cells; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t->right);
        free(t->hidden);
        free(t->widths);
        free(t);
        return NULL;
}

int table_add(Table *t, const char *fmt, ...) {
        va_list ap;
        char *s;
        int n;

        if (t->n_cells == t->n_allocated) {
                size_t k = t->n_allocated ? t->n_allocated * 2 : 64;
                char **c = reallocarray(t->cells, k, sizeof *c);
                if (!c)
                        return -ENOMEM;
                t->cells = c;
                t->n_allocated = k;
        }
        va_start(ap, fmt);
        n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        t->cells[t->n_cells++] = s;
        t->widths_valid = false;
        return 0;
}

void table_align_right(Table *t, size_t column) {
        if (column < t->n_columns)
                t->right[column] = true;
}

void table_set_separator(Table *t, size_t blanks) {
        t->separator = blanks;
}

void table_hide(Table *t, size_t column) {
        if (column < t->n_columns)
                t->hidden[column] = true;
}

size_t table_rows(const Table *t) {
        return (t->n_cells + t->n_columns - 1) / t->n_columns;
}

static const char *table_cell(const Table *t, size_t row, size_t column) {
        size_t i = row * t->n_columns + column;
        return i < t->n_cells ? t->cells[i] : "";
}

static void table_compute_widths(Table *t) {
        size_t rows = table_rows(t);

        for (size_t c = 0; c < t->n_columns; c++) {
                t->widths[c] = 0;
                for (size_t row = 0; row < rows; row++)
                        t->widths[c] = MAX(t->widths[c], strlen(table_cell(t, row, c)));
        }
        t->widths_valid = true;
}

void table_print_row(Table *t, size_t row, FILE *f) {
        _cleanup_free_ char *line = NULL;
        size_t size = 0, n;
        bool first = true;
        FILE *m;

        if (!t->widths_valid)
                table_compute_widths(t);
        /* Lay the row out in memory so that trailing blanks (empty last cells) can be cut. */
        m = open_memstream(&line, &size);
        if (!m)
                return;
        for (size_t c = 0; c < t->n_columns; c++) {
                const char *s = table_cell(t, row, c);
                int w = (int) t->widths[c];

                if (t->hidden[c])
                        continue;
                if (!first)
                        fprintf(m, "%*s", (int) t->separator, "");
                first = false;
                fprintf(m, t->right[c] ? "%*s" : "%-*s", w, s);
        }
        if (fclose(m) != 0 || !line)
                return;
        n = strlen(line);
        while (n > 0 && line[n - 1] == ' ')
                n--;
        fprintf(f, "%.*s\n", (int) n, line);
}

void table_print(Table *t, FILE *f) {
        size_t rows = table_rows(t);

        for (size_t row = 0; row < rows; row++)
                table_print_row(t, row, f);
}

char *bw_display_free(uint64_t have, uint64_t used, char buf[static DURATION_MAX]) {
        char tmp[DURATION_MAX];

        if (have == UINT64_MAX)
                return bw_format(have, buf);
        if (used <= have)
                return bw_format(have - used, buf);
        snprintf(buf, DURATION_MAX, "-%s", bw_format(used - have, tmp));
        return buf;
}

/* --- untrusted text --- */

const char *tty(const char *s) {
        static char *slots[TTY_SLOTS];
        static size_t next;
        char *e;

        if (!s)
                return "";
        e = escape_terminal_dup(s);
        if (!e)
                return "?"; /* out of memory: nothing of the text rather than the raw bytes */
        free(slots[next]);
        slots[next] = e;
        next = (next + 1) % TTY_SLOTS;
        return e;
}

/* --- JSON --- */

json_object *json_text(const char *s) {
        _cleanup_free_ char *e = escape_json_dup(s);

        return e ? json_object_new_string(e) : NULL;
}

json_object *json_bw(uint64_t bw) {
        if (bw == UINT64_MAX)
                return NULL;
        return json_object_new_double((double) bw / (double) BW_UNIT);
}

int json_add(json_object *o, const char *key, json_object *value) {
        return json_object_object_add(o, key, value) < 0 ? -ENOMEM : 0;
}

int json_print(json_object *o) {
        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);

        if (!text)
                return -ENOMEM;
        puts(text);
        return 0;
}

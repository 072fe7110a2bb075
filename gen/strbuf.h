/* SPDX-License-Identifier: Apache-2.0 */
/* A growable text buffer. An allocation failure is remembered, not reported at once:
   the caller checks sb_failed() once, after building the whole text. */
#ifndef GEN_STRBUF_H
#define GEN_STRBUF_H

#include <stddef.h>

struct strbuf {
    char *data;
    size_t len, cap;
    int failed; /* an allocation failed; the contents are incomplete */
};

void sb_init(struct strbuf *sb);
void sb_free(struct strbuf *sb);
void sb_puts(struct strbuf *sb, const char *s);
void sb_putn(struct strbuf *sb, const char *s, size_t n);
void sb_printf(struct strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends s quoted for a POSIX shell when it needs quoting (anything outside
   [A-Za-z0-9_./=:,+@%^-]), as is otherwise; bytes below 0x20 and 0x7F become \xHH so that
   the result is always one printable line. */
void sb_put_shell_word(struct strbuf *sb, const char *s);
/* Appends s always in single quotes, escaped the same way, for error messages. */
void sb_put_quoted(struct strbuf *sb, const char *s);
static inline int sb_failed(const struct strbuf *sb) { return sb->failed; }

#endif

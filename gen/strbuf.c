/* SPDX-License-Identifier: Apache-2.0 */
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_init(struct strbuf *sb)
{
    sb->data = NULL;
    sb->len = sb->cap = 0;
    sb->failed = 0;
}

void sb_free(struct strbuf *sb)
{
    free(sb->data);
    sb_init(sb);
}

/* internal: make room for n more bytes plus a terminating NUL */
static int sb_reserve(struct strbuf *sb, size_t n)
{
    if (sb->failed)
        return 0;
    if (sb->len + n + 1 <= sb->cap)
        return 1;
    size_t cap = sb->cap ? sb->cap : 4096;
    while (cap < sb->len + n + 1)
        cap *= 2;
    char *p = realloc(sb->data, cap);
    if (!p) {
        sb->failed = 1;
        return 0;
    }
    sb->data = p;
    sb->cap = cap;
    return 1;
}

void sb_putn(struct strbuf *sb, const char *s, size_t n)
{
    if (!sb_reserve(sb, n))
        return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void sb_puts(struct strbuf *sb, const char *s)
{
    sb_putn(sb, s, strlen(s));
}

void sb_printf(struct strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        sb->failed = 1;
        return;
    }
    if (!sb_reserve(sb, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

void sb_put_shell_word(struct strbuf *sb, const char *s)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "0123456789_./=:,+@%^-";
    if (*s != '\0' && strspn(s, safe) == strlen(s)) {
        sb_puts(sb, s);
        return;
    }
    sb_put_quoted(sb, s);
}

void sb_put_quoted(struct strbuf *sb, const char *s)
{
    sb_puts(sb, "'");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\'')
            sb_puts(sb, "'\\''");
        else if (*p < 0x20u || *p == 0x7Fu)
            sb_printf(sb, "\\x%02X", *p);
        else
            sb_putn(sb, (const char *)p, 1);
    }
    sb_puts(sb, "'");
}

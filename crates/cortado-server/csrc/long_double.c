/* Decimal arithmetic in C's long double, for the commands whose replies Redis computes in it
 * (INCRBYFLOAT, HINCRBYFLOAT): Rust has no long double, and an f64 sum printed the same way
 * differs in the last digits (0.1 + 0.2 gives 0.30000000000000004 in f64, 0.3 in an x87 long
 * double), which clients would see. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The longest number text accepted, as Redis bounds it. */
#define TEXT_MAX (5 * 1024)

/* Reads all of text[0..len) as a long double, as Redis's string2ld does: no leading space,
 * nothing left over (a NUL byte inside ends strtold's reading early, so the length read is
 * checked too), not NaN, and no overflow or underflow to zero. Returns 1 on success. */
static int read_long_double(const char *text, size_t len, long double *out) {
    char buf[TEXT_MAX];
    char *end;
    long double value;
    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, text, len);
    buf[len] = '\0';
    if (isspace((unsigned char)buf[0])) return 0;
    errno = 0;
    value = strtold(buf, &end);
    if (*end != '\0' || (size_t)(end - buf) != len || errno == EINVAL || isnan(value)) return 0;
    if (errno == ERANGE && (value == HUGE_VALL || value == -HUGE_VALL || value == 0.0L)) return 0;
    *out = value;
    return 1;
}

/* Adds the numbers written in a[0..alen) and b[0..blen) and writes the sum to out as "%.17Lf"
 * with trailing zeros (and a trailing point) removed. Returns the text's length, or -1 if a
 * number does not parse, -2 if the sum is not finite, -3 if it does not fit in out. */
long cortado_add_long_double(const char *a, size_t alen, const char *b, size_t blen,
                             char *out, size_t outlen) {
    long double x, y, sum;
    int n;
    char *point;
    if (!read_long_double(a, alen, &x) || !read_long_double(b, blen, &y)) return -1;
    sum = x + y;
    if (isnan(sum) || isinf(sum)) return -2;
    n = snprintf(out, outlen, "%.17Lf", sum);
    if (n < 0 || (size_t)n + 1 > outlen) return -3;
    point = strchr(out, '.');
    if (point != NULL) {
        while (n > 0 && out[n - 1] == '0') n--;
        if (n > 0 && out[n - 1] == '.') n--;
    }
    if (n == 2 && out[0] == '-' && out[1] == '0') {
        out[0] = '0';
        n = 1;
    }
    out[n] = '\0';
    return n;
}

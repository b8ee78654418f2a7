/* triage._native: the few loops of triage that Python is too slow for.
 *
 * Built at install time by hatch_build.py when a C compiler is there; triage runs
 * without it (triage/native.py says what each caller does then). Every function here
 * has a Python reference it is tested against (tests/test_native.py).
 *
 * extremes(data, block): the metric series of a big log read at native cost. Every loss,
 * gradient norm and tokens-per-second value on every line of `data` is read, and of each
 * `block` bytes the lines holding each metric's lowest and highest value and the first
 * non-finite loss are returned, as (start, end) spans of whole lines (end past the
 * newline). The fast path reads those lines through the normal pipeline, so a loss spike
 * or a throughput drop between its samples is in the series. Values are read as the
 * progress reader's regexes read them on ASCII (triage/structure/tables.py: LOSS_RE,
 * GRAD_NORM_RE, TOKS_RE): the first match on a line counts. The spans only choose
 * lines; the values a report shows are read again in Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef const unsigned char uc;

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int lower(int c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }
/* \w on text: ASCII letters, digits, '_', and any byte of a UTF-8 sequence (a letter
 * or digit in most logs; the reference reads non-ASCII the same way) */
static int is_word(int c) {
    return is_digit(c) || (lower(c) >= 'a' && lower(c) <= 'z') || c == '_' || c >= 0x80;
}
/* \s on ASCII text: Python's str regexes count \x1c-\x1f as space too */
static int is_space(int c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

/* `lit` (lower case) at p, in any case */
static int at_ci(uc *p, uc *e, const char *lit) {
    size_t n = strlen(lit);
    if ((size_t)(e - p) < n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (lower(p[i]) != (unsigned char)lit[i])
            return 0;
    return 1;
}

static uc *skip_space(uc *p, uc *e) {
    while (p < e && is_space(*p))
        p++;
    return p;
}

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* the text of a number as a double, rounded as Python's float() rounds it; *ok = 0
 * where it is not one ("1.2.3"). Up to 15 digits and a power of ten up to 22 (nearly
 * every metric) is one exact multiplication or division (Clinger's fast path); the
 * rest goes to strtod. */
static double to_double(uc *s, uc *e, int *ok) {
    uc *p = s;
    int neg = 0;
    *ok = 0;
    if (p < e && (*p == '+' || *p == '-'))
        neg = *p++ == '-';
    unsigned long long m = 0;
    int digits = 0, scale = 0, any = 0, dot = 0;
    for (; p < e; p++) {
        if (is_digit(*p)) {
            any = 1;
            if (m == 0 && *p == '0') {
                if (dot)
                    scale--;
                continue; /* leading zeros count for nothing */
            }
            if (digits < 19) {
                m = m * 10 + (unsigned)(*p - '0');
                digits++;
                if (dot)
                    scale--;
            } else if (!dot) {
                scale++, digits++;
            } else {
                digits++;
            }
        } else if (*p == '.' && !dot) {
            dot = 1;
        } else {
            break;
        }
    }
    if (!any)
        return 0.0;
    if (p < e && (*p == 'e' || *p == 'E')) {
        uc *q = p + 1;
        int eneg = 0, ex = 0;
        if (q < e && (*q == '+' || *q == '-'))
            eneg = *q++ == '-';
        if (!(q < e && is_digit(*q)))
            return 0.0;
        for (; q < e && is_digit(*q); q++)
            if (ex < 100000)
                ex = ex * 10 + (*q - '0');
        scale += eneg ? -ex : ex;
        p = q;
    }
    if (p != e)
        return 0.0;
    *ok = 1;
    if (m == 0)
        return neg ? -0.0 : 0.0;
    if (digits <= 15 && scale >= -22 && scale <= 22) {
        double v = (double)m;
        v = scale < 0 ? v / POW10[-scale] : v * POW10[scale];
        return neg ? -v : v;
    }
    char small[64];
    size_t n = (size_t)(e - s);
    char *tmp = n < sizeof small ? small : malloc(n + 1); /* no GIL needed */
    if (tmp == NULL) {
        *ok = 0;
        return 0.0;
    }
    memcpy(tmp, s, n);
    tmp[n] = 0;
    double v = strtod(tmp, NULL); /* Python leaves LC_NUMERIC at "C" */
    if (tmp != small)
        free(tmp);
    return v;
}

/* \b at p in [.., e): a word character on one side only */
static int boundary_at(uc *p, uc *e) { return is_word(p[-1]) != (p < e && is_word(*p)); }

/* [-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf), then \b where `boundary`: the value, or
 * NULL where none starts at p. Where \b fails after the longest match, the regex backs
 * off; the only other ends it can stop at are the end of the fraction's digits without
 * the exponent, just after the point (a digit follows: \b holds) and just before it. */
static uc *number(uc *p, uc *e, int boundary, double *v) {
    uc *s = p;
    if (p < e && (*p == '+' || *p == '-'))
        p++;
    if (p < e && is_digit(*p)) {
        while (p < e && is_digit(*p))
            p++;
        uc *int_end = p, *frac_end = p;
        int dot = p < e && *p == '.';
        if (dot) {
            p++;
            while (p < e && is_digit(*p))
                p++;
            frac_end = p;
        }
        uc *exp_end = NULL;
        if (p < e && (*p == 'e' || *p == 'E')) {
            uc *q = p + 1;
            if (q < e && (*q == '+' || *q == '-'))
                q++;
            if (q < e && is_digit(*q)) {
                while (q < e && is_digit(*q))
                    q++;
                exp_end = q;
            }
        }
        uc *stop;
        if (!boundary)
            stop = exp_end ? exp_end : frac_end;
        else if (exp_end && boundary_at(exp_end, e))
            stop = exp_end;
        else if (boundary_at(frac_end, e))
            stop = frac_end;
        else if (dot)
            stop = frac_end > int_end + 1 ? int_end + 1 : int_end; /* "1." before a digit, else "1" */
        else
            return NULL;
        int ok;
        *v = to_double(s, stop, &ok);
        return ok ? stop : NULL;
    }
    int neg = (p > s && *s == '-');
    if (at_ci(p, e, "nan") || at_ci(p, e, "inf")) {
        int nan = lower(*p) == 'n';
        p += 3;
        if (boundary && p < e && is_word(*p))
            return NULL;
        *v = nan ? NAN : (neg ? -INFINITY : INFINITY);
        return p;
    }
    return NULL;
}

/* ['"]?(?:tensor\()?NUMBER\b */
static uc *loss_value(uc *p, uc *e, double *v) {
    if (p < e && (*p == '\'' || *p == '"'))
        p++;
    if (at_ci(p, e, "tensor("))
        p += 7;
    return number(p, e, 1, v);
}

/* LOSS_RE at p, which holds "loss" in some case; `ls` is the line's start */
static int loss_at(uc *ls, uc *p, uc *e, double *v) {
    if (p > ls && is_word(p[-1])) /* (?:\b|') before it: a quote is no word character */
        return 0;
    uc *q = p + 4;
    if (q < e && (*q == '\'' || *q == '"'))
        q++;
    uc *r = skip_space(q, e);
    if (r < e && (*r == '=' || *r == ':')) {
        if (loss_value(skip_space(r + 1, e), e, v))
            return 1;
    }
    if (q < e && is_space(*q)) {
        r = skip_space(q, e);
        if (at_ci(r, e, "is") && r + 2 < e && is_space(r[2])) {
            if (loss_value(skip_space(r + 2, e), e, v))
                return 1;
        }
        if (loss_value(r, e, v))
            return 1;
    }
    return 0;
}

/* GRAD_NORM_RE at p: 1 with a value, -1 for no match */
static int grad_at(uc *p, uc *e, double *v) {
    uc *q;
    if (at_ci(p, e, "gradnorm"))
        q = p + 8;
    else if (at_ci(p, e, "grad_norm"))
        q = p + 9;
    else
        return -1;
    if (q < e && (*q == '\'' || *q == '"'))
        q++;
    q = skip_space(q, e);
    if (!(q < e && (*q == '=' || *q == ':')))
        return -1;
    return number(skip_space(q + 1, e), e, 0, v) != NULL ? 1 : -1;
}

/* TOKS_RE at p, which holds "tok" in some case: 1 with a value, 0 where the regex
 * matches digits that are no number ("1.2.3": the line has no value), -1 for no match */
static int toks_at(uc *p, uc *e, double *v) {
    static const char *forms[] = {"tok/s", "tokens/s", "tokens_per_second", "tokens_per_sec", "tok_per_s"};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        if (!at_ci(p, e, forms[i]))
            continue;
        uc *q = skip_space(p + strlen(forms[i]), e);
        if (q < e && (*q == '=' || *q == ':'))
            q = skip_space(q + 1, e);
        uc *s = q;
        while (q < e && (is_digit(*q) || *q == '.'))
            q++;
        if (q == s)
            continue;  /* the regex would try the next form here too */
        int ok;
        *v = to_double(s, q, &ok);
        return ok ? 1 : 0;
    }
    return -1;
}

enum { LOSS, GRAD, TOKS, METRICS, STEP = METRICS, ALL };

/* STEP_RE at p: \b(?:step|iter(?:ation)?|global_step)[\s=:]+(\d+); 1 with the digits'
 * span in *ds..*de, -1 for no match */
static int step_at(uc *ls, uc *p, uc *e, uc **ds, uc **de) {
    if (p > ls && is_word(p[-1]))
        return -1;
    uc *q;
    if (at_ci(p, e, "step"))
        q = p + 4;
    else if (at_ci(p, e, "iteration"))
        q = p + 9; /* "iter" then "ation": no [\s=:] after "iter" here */
    else if (at_ci(p, e, "iter"))
        q = p + 4;
    else if (at_ci(p, e, "global_step"))
        q = p + 11;
    else
        return -1;
    uc *r = q;
    while (r < e && (is_space(*r) || *r == '=' || *r == ':'))
        r++;
    if (r == q || !(r < e && is_digit(*r)))
        return -1;
    *ds = r;
    while (r < e && is_digit(*r))
        r++;
    *de = r;
    return 1;
}

/* the metric a candidate (next_candidate) starts */
static int metric_of(uc *p) {
    int a = lower(p[0]), b = lower(p[1]);
    return a == 'l' ? LOSS : a == 't' ? TOKS : (a == 'g' && b == 'r') ? GRAD : STEP;
}

/* metric m's grammar at p on the line [ls, le): 1 with its value in *v (a step: its
 * digits in *ds..*de), 0 where it matches without a value, -1 where it does not match */
static int read_metric(int m, uc *ls, uc *p, uc *le, double *v, uc **ds, uc **de) {
    switch (m) {
    case STEP:
        return step_at(ls, p, le, ds, de);
    case LOSS:
        return at_ci(p, le, "loss") && loss_at(ls, p, le, v) ? 1 : -1;
    case GRAD:
        return grad_at(p, le, v);
    default:
        return toks_at(p, le, v);
    }
}

typedef struct {
    Py_ssize_t lo_at, hi_at, bad_at; /* line starts; -1 for none */
    double lo, hi;
} Block;

/* a keyword's first three letters, in any case: "los" (loss), "gra" (grad_norm), "tok"
 * (tok/s, tokens...), and where `steps`, "ste", "ite" and "glo" (step, iter, global_step) */
static int is_candidate(uc *p, int steps) {
    int a = p[0] | 0x20, b = p[1] | 0x20, c = p[2] | 0x20;
    if ((a == 'l' && b == 'o' && c == 's') || (a == 'g' && b == 'r' && c == 'a') || (a == 't' && b == 'o' && c == 'k'))
        return 1;
    return steps && ((a == 's' && b == 't' && c == 'e') || (a == 'i' && b == 't' && c == 'e') ||
                     (a == 'g' && b == 'l' && c == 'o'));
}

/* The first candidate at or after p (end where none): sixteen places at a time where the
 * compiler has vector types, one at a time elsewhere. */
static uc *next_candidate(uc *p, uc *end, int steps) {
#if defined(__GNUC__) || defined(__clang__)
    typedef unsigned char v16 __attribute__((vector_size(16)));
    typedef signed char m16 __attribute__((vector_size(16)));
    while (end - p >= 18) {
        v16 a, b, c;
        memcpy(&a, p, 16);
        memcpy(&b, p + 1, 16);
        memcpy(&c, p + 2, 16);
        a |= 0x20;
        b |= 0x20;
        c |= 0x20;
        m16 h = ((a == 'l') & (b == 'o') & (c == 's')) | ((a == 't') & (b == 'o') & (c == 'k')) |
                ((a == 'g') & (b == 'r') & (c == 'a'));
        if (steps)
            h |= ((a == 's') & (b == 't') & (c == 'e')) | ((a == 'i') & (b == 't') & (c == 'e')) |
                 ((a == 'g') & (b == 'l') & (c == 'o'));
        unsigned long long w[2];
        memcpy(w, &h, 16);
        if (w[0] | w[1]) {
            for (int i = 0; i < 16; i++)
                if (h[i])
                    return p + i;
        }
        p += 16;
    }
#endif
    for (; end - p >= 3; p++)
        if (is_candidate(p, steps))
            return p;
    return end;
}

/* the last newline in [from, to), or NULL */
static uc *last_newline(uc *from, uc *to) {
#if defined(__GLIBC__)
    return memrchr(from, '\n', (size_t)(to - from));
#else
    while (to > from)
        if (*--to == '\n')
            return (uc *)to;
    return NULL;
#endif
}

static void note(Block *b, Py_ssize_t start, double v, int nonfinite_kept) {
    if (!isfinite(v)) {
        if (nonfinite_kept && b->bad_at < 0)
            b->bad_at = start;
        return;
    }
    if (b->lo_at < 0 || v < b->lo) {
        b->lo = v;
        b->lo_at = start;
    }
    if (b->hi_at < 0 || v > b->hi) {
        b->hi = v;
        b->hi_at = start;
    }
}

static int cmp_ssize(const void *a, const void *b) {
    Py_ssize_t x = *(const Py_ssize_t *)a, y = *(const Py_ssize_t *)b;
    return (x > y) - (x < y);
}

static PyObject *extremes(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer view;
    Py_ssize_t block;
    if (!PyArg_ParseTuple(args, "y*n", &view, &block))
        return NULL;
    if (block <= 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "block must be positive");
        return NULL;
    }
    const char *buf = view.buf;
    Py_ssize_t len = view.len;
    Py_ssize_t nblocks = len / block + 1;
    Block *blocks = PyMem_Calloc((size_t)(nblocks * METRICS), sizeof(Block));
    if (blocks == NULL) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < nblocks * METRICS; i++)
        blocks[i].lo_at = blocks[i].hi_at = blocks[i].bad_at = -1;

    Py_BEGIN_ALLOW_THREADS
    /* one pass over the bytes: at each pair of letters that can start a keyword, the
     * metric's grammar is tried; the first match of each metric on a line counts */
    uc *data = (uc *)buf, *end = data + len;
    uc *ls = data, *le = NULL; /* the line of the last candidate: its start and its newline */
    int done = 0;              /* the metrics this line has given (a bit each) */
    for (uc *p = next_candidate(data, end, 0); p < end; p = next_candidate(p + 1, end, 0)) {
        if (le == NULL || p > le) { /* a candidate on a new line */
            uc *from = le == NULL ? data : le + 1;
            uc *nl = last_newline(from, p);
            ls = nl == NULL ? from : nl + 1;
            le = memchr(p, '\n', (size_t)(end - p));
            if (le == NULL)
                le = end;
            done = 0;
        }
        int m = metric_of(p);
        if (done & (1 << m))
            continue;
        double v = 0.0;
        int found = read_metric(m, ls, p, le, &v, NULL, NULL);
        if (found < 0)
            continue;
        if (found == 1)
            note(&blocks[((ls - data) / block) * METRICS + m], ls - data, v, m == LOSS);
        done |= 1 << m;
        if (done == (1 << METRICS) - 1 && le < end)
            p = le; /* the rest of the line has nothing more to give */
    }
    Py_END_ALLOW_THREADS

    /* the chosen line starts, sorted and unique, as (start, end) spans */
    Py_ssize_t *starts = PyMem_Malloc((size_t)(nblocks * METRICS * 3 + 1) * sizeof(Py_ssize_t));
    PyObject *out = NULL;
    if (starts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < nblocks * METRICS; i++) {
        if (blocks[i].lo_at >= 0)
            starts[n++] = blocks[i].lo_at;
        if (blocks[i].hi_at >= 0)
            starts[n++] = blocks[i].hi_at;
        if (blocks[i].bad_at >= 0)
            starts[n++] = blocks[i].bad_at;
    }
    qsort(starts, (size_t)n, sizeof *starts, cmp_ssize);
    out = PyList_New(0);
    if (out == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i && starts[i] == starts[i - 1])
            continue;
        const char *nl = memchr(buf + starts[i], '\n', (size_t)(len - starts[i]));
        Py_ssize_t end = nl ? (Py_ssize_t)(nl - buf) + 1 : len;
        PyObject *span = Py_BuildValue("(nn)", starts[i], end);
        if (span == NULL || PyList_Append(out, span) < 0) {
            Py_XDECREF(span);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(span);
    }
done:
    PyMem_Free(starts);
    PyMem_Free(blocks);
    PyBuffer_Release(&view);
    return out;
}

/* metrics(text) -> (step, loss, grad_norm, tok_s) | None: one ASCII line's values as
 * the progress reader's regexes read them (None for what it lacks); None for a line
 * with other characters, which the regexes read (their \s, \d and \w are Unicode). */
static PyObject *metrics(PyObject *Py_UNUSED(self), PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "metrics() takes a str");
        return NULL;
    }
    if (!PyUnicode_IS_ASCII(arg))
        Py_RETURN_NONE;
    uc *ls = PyUnicode_1BYTE_DATA(arg), *le = ls + PyUnicode_GET_LENGTH(arg);
    double val[METRICS];
    int got[ALL] = {0, 0, 0, 0};
    uc *ds = NULL, *de = NULL;
    int done = 0;
    for (uc *p = next_candidate(ls, le, 1); p < le && done != (1 << ALL) - 1; p = next_candidate(p + 1, le, 1)) {
        int m = metric_of(p);
        if (done & (1 << m))
            continue;
        int found = read_metric(m, ls, p, le, m == STEP ? NULL : &val[m], &ds, &de);
        if (found < 0)
            continue;
        got[m] = found == 1;
        done |= 1 << m;
    }
    PyObject *out = PyTuple_New(ALL);
    if (out == NULL)
        return NULL;
    static const int order[ALL] = {STEP, LOSS, GRAD, TOKS};
    for (int i = 0; i < ALL; i++) {
        int m = order[i];
        PyObject *v;
        if (!got[m]) {
            v = Py_NewRef(Py_None);
        } else if (m == STEP) {
            char tmp[32];
            size_t n = (size_t)(de - ds);
            if (n < sizeof tmp) {
                memcpy(tmp, ds, n);
                tmp[n] = 0;
                v = PyLong_FromString(tmp, NULL, 10);
            } else {
                PyObject *digits = PyUnicode_FromStringAndSize((const char *)ds, (Py_ssize_t)n);
                v = digits == NULL ? NULL : PyLong_FromUnicodeObject(digits, 10);
                Py_XDECREF(digits);
            }
        } else {
            v = PyFloat_FromDouble(val[m]);
        }
        if (v == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, v);
    }
    return out;
}

/* ---- plain(data): one physical line cleaned and peeled, as normalize.py does it ------
 *
 * normalize_plain's work on the lines that make up nearly all of a log: printable ASCII
 * (tabs allowed), at most a final \r, no escaped newline and no progress bar. Each
 * prefix row of triage/ingest/normalize.py (PREFIXES, SRUN_LABEL) is matched here as
 * Python's regex matches it on such text, backtracking included, in table order, at
 * most eight times; the row's handler runs as the Python one does (the first rank and
 * the first time kept). Every other line is None: the Python path reads it. */

#define CH(i) ((i) < n ? (long)s[(i)] : -1L)
#define UP(c) ((c) >= 'A' && (c) <= 'Z')
#define LO(c) ((c) >= 'a' && (c) <= 'z')
#define WS(c) ws_c(c)
#define DG(c) dg_c(c)
#define AW(c) aw_c(c)

typedef const Py_UCS4 u4;

/* \s, \d and \w as Python's regexes read them in a str (-1: past the end) */
static int ws_c(long c) {
    if (c < 128)
        return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
    return Py_UNICODE_ISSPACE((Py_UCS4)c);
}
static int dg_c(long c) { return (c >= '0' && c <= '9') || (c >= 128 && Py_UNICODE_ISDECIMAL((Py_UCS4)c)); }
static int aw_c(long c) {
    if (c < 128)
        return (c >= '0' && c <= '9') || UP(c) || LO(c) || c == '_';
    return Py_UNICODE_ISALNUM((Py_UCS4)c);
}

/* a digit read as a number here is an ASCII one: another (int() reads "\u0663" too) sends
 * the line to Python */
static int g_bail;
static int ascii_digit(long c) {
    if (c >= '0' && c <= '9')
        return 1;
    g_bail = 1;
    return 0;
}



enum { TS_NONE, TS_ISO, TS_GLOG, TS_SYSLOG, TS_CTIME, TS_CLOCK };

typedef Py_ssize_t (*Rest)(u4 *s, Py_ssize_t n, Py_ssize_t i);

typedef struct {
    long long r;
    int has_r, kind, bail;
    int y, mo, d, h, mi, sec, mon; /* mon: 1-12 from a month name, 0 for another */
    Py_ssize_t fs, fl;             /* the fraction's digits (fl 0: none) */
} Groups;

static Py_ssize_t ws(u4 *s, Py_ssize_t n, Py_ssize_t i) {
    while (i < n && WS(s[i]))
        i++;
    return i;
}
static Py_ssize_t digs(u4 *s, Py_ssize_t n, Py_ssize_t i) {
    while (i < n && DG(s[i]))
        i++;
    return i;
}
static int cls5(long c) { return AW(c) || c == '.' || c == '-'; }  /* [\w.-] */
static int clsip(long c) { return cls5(c) || c == ':'; }          /* [\w.:-] */
static int clsfile(long c) { return cls5(c) || c == '/'; }        /* [\w./-] */
static int clspl(long c) { return cls5(c) || c == '<' || c == '>'; } /* [\w.<>-] */
static int clshf(long c) { return DG(c) || c == '-' || c == ':' || c == ' ' || c == ','; }
static int clssys(long c) { return clsfile(c) || c == '@'; }      /* [\w./@-] */
static Py_ssize_t run(u4 *s, Py_ssize_t n, Py_ssize_t i, int (*cls)(long)) {
    while (i < n && cls(s[i]))
        i++;
    return i;
}
static int lit(u4 *s, Py_ssize_t n, Py_ssize_t i, const char *w) {
    for (; *w; w++, i++)
        if (i >= n || s[i] != (unsigned char)*w)
            return 0;
    return 1;
}
static int num(u4 *s, Py_ssize_t i, Py_ssize_t j) {
    int v = 0;
    for (; i < j; i++)
        v = ascii_digit(s[i]) ? v * 10 + (int)(s[i] - '0') : 0;
    return v;
}
/* two digits at i (\d{2}) into *v */
static int two(u4 *s, Py_ssize_t n, Py_ssize_t i, int *v) {
    if (!(DG(CH(i)) && DG(CH(i + 1))))
        return 0;
    *v = num(s, i, i + 2);
    return 1;
}
static int rank_of(u4 *s, Py_ssize_t i, Py_ssize_t j, Groups *g) {
    if (j - i > 18) {
        g->bail = 1;
        return 0;
    }
    long long v = 0;
    for (; i < j; i++)
        v = ascii_digit(s[i]) ? v * 10 + (long long)(s[i] - '0') : 0;
    g->r = v;
    g->has_r = 1;
    return 1;
}

/* _LEVEL, then `rest`: the alternatives in their order */
static const char *LEVELS[] = {"TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "WARNING",
                               "ERROR", "ERR", "CRITICAL", "FATAL", NULL};
static Py_ssize_t level(u4 *s, Py_ssize_t n, Py_ssize_t i, Rest rest) {
    for (const char **l = LEVELS; *l; l++)
        if (lit(s, n, i, *l)) {
            Py_ssize_t e = rest(s, n, i + (Py_ssize_t)strlen(*l));
            if (e >= 0)
                return e;
        }
    return -1;
}

/* (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2}) */
static Py_ssize_t hms(u4 *s, Py_ssize_t n, Py_ssize_t i, Groups *g) {
    if (!two(s, n, i, &g->h) || CH(i + 2) != ':' || !two(s, n, i + 3, &g->mi) || CH(i + 5) != ':' ||
        !two(s, n, i + 6, &g->sec))
        return -1;
    return i + 8;
}

/* _ISO at i, then `rest`, trying the fraction and the zone as the regex backtracks */
static Py_ssize_t iso(u4 *s, Py_ssize_t n, Py_ssize_t i, Groups *g, Rest rest) {
    if (digs(s, n, i) < i + 4)
        return -1;
    g->y = num(s, i, i + 4);
    i += 4;
    if (!(CH(i) == '-' || CH(i) == '/') || !two(s, n, i + 1, &g->mo))
        return -1;
    i += 3;
    if (!(CH(i) == '-' || CH(i) == '/') || !two(s, n, i + 1, &g->d))
        return -1;
    i += 3;
    int c = CH(i);
    if (!(c == 'T' || c == ' ' || c == '_'))
        return -1;
    Py_ssize_t p = hms(s, n, i + 1, g);
    if (p < 0)
        return -1;
    Py_ssize_t nd = 0;
    if (CH(p) == '.' || CH(p) == ',') {
        nd = digs(s, n, p + 1) - (p + 1);
        if (nd > 9)
            nd = 9;
    }
    for (Py_ssize_t f = nd; f >= 0; f--) {
        Py_ssize_t q = f ? p + 1 + f : p;
        Py_ssize_t cand[4];
        int k = 0;
        if (CH(q) == 'Z')
            cand[k++] = q + 1;
        else if ((CH(q) == '+' || CH(q) == '-') && DG(CH(q + 1)) && DG(CH(q + 2))) {
            if (CH(q + 3) == ':' && DG(CH(q + 4)) && DG(CH(q + 5)))
                cand[k++] = q + 6;
            if (DG(CH(q + 3)) && DG(CH(q + 4)))
                cand[k++] = q + 5;
        }
        cand[k++] = q;
        for (int j = 0; j < k; j++) {
            Py_ssize_t e = rest(s, n, cand[j]);
            if (e >= 0) {
                g->fs = p + 1;
                g->fl = f;
                g->kind = TS_ISO;
                return e;
            }
        }
    }
    return -1;
}

static int month(u4 *s, Py_ssize_t n, Py_ssize_t i) {
    static const char *M[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    for (int m = 0; m < 12; m++)
        if (lit(s, n, i, M[m]))
            return m + 1;
    return 0;
}

/* the rows, each matched at the start of s[0..n) (-1: no match) */
static Py_ssize_t r_role(u4 *s, Py_ssize_t n, Groups *g) {
    static const char *W[] = {"default", "trainer", "worker", "role", NULL};
    if (CH(0) != '[')
        return -1;
    for (const char **w = W; *w; w++) {
        if (!lit(s, n, 1, *w))
            continue;
        Py_ssize_t i = 1 + (Py_ssize_t)strlen(*w), j = digs(s, n, i);
        if (j > i && CH(j) == ']' && CH(j + 1) == ':') {
            if (!rank_of(s, i, j, g))
                return -1;
            return j + 2 + (WS(CH(j + 2)) ? 1 : 0);
        }
    }
    return -1;
}
static Py_ssize_t r_rank_bracket(u4 *s, Py_ssize_t n, Groups *g) {
    if (!lit(s, n, 0, "[rank"))
        return -1;
    Py_ssize_t j = digs(s, n, 5);
    if (j == 5 || CH(j) != ']' || CH(j + 1) != ':' || !rank_of(s, 5, j, g))
        return -1;
    return j + 2 + (WS(CH(j + 2)) ? 1 : 0);
}
static Py_ssize_t r_rank_colon(u4 *s, Py_ssize_t n, Groups *g) {
    if (!lit(s, n, 0, "rank"))
        return -1;
    Py_ssize_t j = digs(s, n, 4), k = j;
    if (j == 4)
        return -1;
    if (CH(k) == ']')
        k++;
    if (CH(k) != ':' || !WS(CH(k + 1)) || !rank_of(s, 4, j, g))
        return -1;
    return k + 2;
}
static Py_ssize_t r_openmpi(u4 *s, Py_ssize_t n, Groups *g) {
    if (CH(0) != '[')
        return -1;
    Py_ssize_t i = digs(s, n, 1);
    if (i == 1 || CH(i) != ',')
        return -1;
    Py_ssize_t j = digs(s, n, i + 1);
    if (j == i + 1 || CH(j) != ']' || CH(j + 1) != '<')
        return -1;
    if (!(lit(s, n, j + 2, "stdout>:") || lit(s, n, j + 2, "stderr>:")) || !rank_of(s, i + 1, j, g))
        return -1;
    Py_ssize_t e = j + 10;
    return e + (WS(CH(e)) ? 1 : 0);
}
static Py_ssize_t r_slurm_node(u4 *s, Py_ssize_t n, Groups *g) {
    Py_ssize_t R = run(s, n, 0, cls5);
    if (CH(R) != ':' || CH(R + 1) != ' ')
        return -1;
    Py_ssize_t q = R;
    while (q > 0 && DG(s[q - 1]))
        q--;
    if (q == R || q < 2 || s[q - 1] != '-')
        return -1;
    Py_ssize_t i = R + 2, j = digs(s, n, i);
    if (j == i || j - i > 4 || CH(j) != ':' || CH(j + 1) != ' ' || !rank_of(s, i, j, g))
        return -1;
    return j + 2;
}
static Py_ssize_t pid_rest(u4 *s, Py_ssize_t n, Py_ssize_t i) {
    if (!lit(s, n, i, "pid="))
        return -1;
    Py_ssize_t k = digs(s, n, i + 4);
    if (k == i + 4)
        return -1;
    if (lit(s, n, k, ", ip=")) {
        Py_ssize_t m = run(s, n, k + 5, clsip);
        if (m > k + 5 && CH(m) == ')')
            return m + 1 + (WS(CH(m + 1)) ? 1 : 0);
    }
    if (CH(k) == ')')
        return k + 1 + (WS(CH(k + 1)) ? 1 : 0);
    return -1;
}
static Py_ssize_t r_actor(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    if (CH(0) != '(')
        return -1;
    int c = CH(1);
    if (UP(c) || LO(c) || c == '_') {
        Py_ssize_t j = run(s, n, 2, cls5);
        Py_ssize_t after_rank[2];
        int k = 0;
        if (lit(s, n, j, ", rank=")) {
            Py_ssize_t d = digs(s, n, j + 7);
            if (d > j + 7)
                after_rank[k++] = d;
        }
        after_rank[k++] = j;
        for (int a = 0; a < k; a++) {
            Py_ssize_t p = after_rank[a];
            Py_ssize_t opts[2];
            int m = 0;
            if (CH(p) == ',')
                opts[m++] = p + 1;
            opts[m++] = p;
            for (int b = 0; b < m; b++)
                if (CH(opts[b]) == ' ') {
                    Py_ssize_t e = pid_rest(s, n, opts[b] + 1);
                    if (e >= 0)
                        return e;
                }
        }
    }
    return pid_rest(s, n, 1);
}
static Py_ssize_t r_raylet(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    if (!lit(s, n, 0, "(raylet"))
        return -1;
    Py_ssize_t k = 7;
    if (lit(s, n, k, ", ip=")) {
        Py_ssize_t m = run(s, n, k + 5, clsip);
        if (m > k + 5 && CH(m) == ')')
            return m + 1 + (WS(CH(m + 1)) ? 1 : 0);
    }
    if (CH(k) == ')')
        return k + 1 + (WS(CH(k + 1)) ? 1 : 0);
    return -1;
}
static Py_ssize_t r_kubectl(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    if (!lit(s, n, 0, "[pod/"))
        return -1;
    Py_ssize_t a = run(s, n, 5, cls5);
    if (a == 5 || CH(a) != '/')
        return -1;
    Py_ssize_t b = run(s, n, a + 1, cls5);
    if (b == a + 1 || CH(b) != ']' || !WS(CH(b + 1)))
        return -1;
    return b + 2;
}
static Py_ssize_t r_compose(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    Py_ssize_t R = run(s, n, 0, cls5);
    if (R >= 2 && R <= 40 && WS(CH(R))) {
        Py_ssize_t k = ws(s, n, R);
        if (CH(k) == '|' && WS(CH(k + 1)) && k + 2 < n && !WS(s[k + 2]))
            return k + 2;
    }
    int ok = 0;
    for (Py_ssize_t j = 1; j <= 3 && !ok; j++) {
        Py_ssize_t b = R - j - 1; /* the [-_] */
        if (b < 1 || b > 38)
            continue;
        ok = s[b] == '-' || s[b] == '_';
        for (Py_ssize_t x = R - j; x < R && ok; x++)
            ok = DG(s[x]);
    }
    if (!ok || CH(R) != ' ')
        return -1;
    Py_ssize_t k = R;
    while (CH(k) == ' ')
        k++;
    if (CH(k) != '|' || CH(k + 1) != ' ')
        return -1;
    return k + 2;
}
static Py_ssize_t iso_tail(u4 *s, Py_ssize_t n, Py_ssize_t q) {
    for (int b = 1; b >= 0; b--) {
        if (b && CH(q) != ']')
            continue;
        Py_ssize_t r = q + b;
        if (WS(CH(r)))
            return ws(s, n, r);
        if (CH(r) == ':')
            return ws(s, n, r + 1);
        Py_ssize_t k = ws(s, n, r);
        if (CH(k) == '|')
            return ws(s, n, k + 1);
        if (r > 0 && s[r - 1] == ']' && CH(r) == '[')
            return r;
    }
    return -1;
}
static Py_ssize_t r_iso(u4 *s, Py_ssize_t n, Groups *g) {
    return iso(s, n, CH(0) == '[' ? 1 : 0, g, iso_tail);
}
static Py_ssize_t close_bracket(u4 *s, Py_ssize_t n, Py_ssize_t q) {
    if (CH(q) != ']')
        return -1;
    return q + 1 + (WS(CH(q + 1)) ? 1 : 0);
}
static Py_ssize_t r_named_iso(u4 *s, Py_ssize_t n, Groups *g) {
    if (CH(0) != '[' || !(UP(CH(1)) || LO(CH(1))))
        return -1;
    Py_ssize_t j = run(s, n, 2, cls5);
    if (j - 2 > 39 || CH(j) != ' ')
        return -1;
    return iso(s, n, j + 1, g, close_bracket);
}
/* glog's "(?:\s+\d+)?\s+[^\]\s]+:\d+\]\s?" at q */
static Py_ssize_t glog_file(u4 *s, Py_ssize_t n, Py_ssize_t q) {
    if (!WS(CH(q)))
        return -1;
    Py_ssize_t k = ws(s, n, q), e = k;
    while (e < n && s[e] != ']' && !WS(s[e]))
        e++;
    if (CH(e) != ']')
        return -1;
    Py_ssize_t d = e;
    while (d > k && DG(s[d - 1]))
        d--;
    if (d == e || d - 1 <= k || s[d - 1] != ':')
        return -1;
    return e + 1 + (WS(CH(e + 1)) ? 1 : 0);
}
static Py_ssize_t glog_rest(u4 *s, Py_ssize_t n, Py_ssize_t q) {
    if (WS(CH(q))) {
        Py_ssize_t k = ws(s, n, q), d = digs(s, n, k);
        for (Py_ssize_t dd = d; dd > k; dd--) {
            Py_ssize_t e = glog_file(s, n, dd);
            if (e >= 0)
                return e;
        }
    }
    return glog_file(s, n, q);
}
static Py_ssize_t r_glog(u4 *s, Py_ssize_t n, Groups *g) {
    Py_ssize_t i = CH(0) == '[' ? 1 : 0;
    int c = CH(i);
    if (!(c == 'I' || c == 'W' || c == 'E' || c == 'F') || !two(s, n, i + 1, &g->mo) ||
        !two(s, n, i + 3, &g->d) || CH(i + 5) != ' ')
        return -1;
    Py_ssize_t p = hms(s, n, i + 6, g);
    if (p < 0)
        return -1;
    Py_ssize_t nd = 0;
    if (CH(p) == '.') {
        nd = digs(s, n, p + 1) - (p + 1);
        if (nd > 9)
            nd = 9;
    }
    for (Py_ssize_t f = nd; f >= 0; f--) {
        Py_ssize_t e = glog_rest(s, n, f ? p + 1 + f : p);
        if (e >= 0) {
            g->fs = p + 1;
            g->fl = f;
            g->kind = TS_GLOG;
            return e;
        }
    }
    return -1;
}
static Py_ssize_t r_glog_old(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    int c = CH(1);
    if (CH(0) != '[' || !(c == 'I' || c == 'W' || c == 'E' || c == 'F') || CH(2) != ' ')
        return -1;
    Py_ssize_t a = run(s, n, 3, clsfile);
    if (a == 3 || CH(a) != ':')
        return -1;
    Py_ssize_t d = digs(s, n, a + 1);
    if (d == a + 1 || CH(d) != ']')
        return -1;
    return d + 1 + (WS(CH(d + 1)) ? 1 : 0);
}
/* "(?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) hh:mm:ss" at i (the day's digits: 1 or 2) */
static Py_ssize_t mon_day_time(u4 *s, Py_ssize_t n, Py_ssize_t i, Groups *g) {
    if (!(UP(CH(i)) && LO(CH(i + 1)) && LO(CH(i + 2))) || CH(i + 3) != ' ')
        return -1;
    g->mon = month(s, n, i);
    Py_ssize_t k = i + 3;
    while (CH(k) == ' ')
        k++;
    Py_ssize_t d = digs(s, n, k);
    if (d == k || d - k > 2 || CH(d) != ' ')
        return -1;
    g->d = num(s, k, d);
    return hms(s, n, d + 1, g);
}
static Py_ssize_t r_syslog(u4 *s, Py_ssize_t n, Groups *g) {
    Py_ssize_t p = mon_day_time(s, n, 0, g);
    if (p < 0)
        return -1;
    if (CH(p) == '.' && DG(CH(p + 1)))
        p = digs(s, n, p + 1);
    if (CH(p) != ' ')
        return -1;
    Py_ssize_t a = run(s, n, p + 1, cls5);
    if (a == p + 1 || CH(a) != ' ')
        return -1;
    Py_ssize_t b = run(s, n, a + 1, clssys);
    if (b == a + 1)
        return -1;
    if (CH(b) == '[') {
        Py_ssize_t d = digs(s, n, b + 1);
        if (d > b + 1 && CH(d) == ']' && CH(d + 1) == ':' && WS(CH(d + 2))) {
            g->kind = TS_SYSLOG;
            return d + 3;
        }
    }
    if (CH(b) != ':' || !WS(CH(b + 1)))
        return -1;
    g->kind = TS_SYSLOG;
    return b + 2;
}
static Py_ssize_t r_ctime(u4 *s, Py_ssize_t n, Groups *g) {
    static const char *D[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
    int day = 0;
    for (int k = 0; k < 7 && !day; k++)
        day = lit(s, n, 0, D[k]);
    if (!day || CH(3) != ' ')
        return -1;
    Py_ssize_t p = mon_day_time(s, n, 4, g);
    if (p < 0 || CH(p) != ' ' || digs(s, n, p + 1) < p + 5)
        return -1;
    g->y = num(s, p + 1, p + 5);
    Py_ssize_t e = p + 5;
    if (WS(CH(e))) {
        g->kind = TS_CTIME;
        return ws(s, n, e);
    }
    if (CH(e) == '[') {
        g->kind = TS_CTIME;
        return e;
    }
    return -1;
}
static Py_ssize_t r_dmesg_t(u4 *s, Py_ssize_t n, Groups *g) {
    if (CH(0) != '[' || !(UP(CH(1)) && LO(CH(2)) && LO(CH(3))) || CH(4) != ' ')
        return -1;
    Py_ssize_t p = mon_day_time(s, n, 5, g);
    if (p < 0 || CH(p) != ' ' || digs(s, n, p + 1) < p + 5 || CH(p + 5) != ']')
        return -1;
    g->y = num(s, p + 1, p + 5);
    g->kind = TS_CTIME;
    return p + 6 + (WS(CH(p + 6)) ? 1 : 0);
}
static Py_ssize_t r_dmesg(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    if (CH(0) != '[')
        return -1;
    Py_ssize_t i = ws(s, n, 1), d = digs(s, n, i);
    if (d == i || CH(d) != '.')
        return -1;
    Py_ssize_t f = digs(s, n, d + 1);
    if (f - (d + 1) < 3 || CH(f) != ']')
        return -1;
    return f + 1 + (WS(CH(f + 1)) ? 1 : 0);
}
static Py_ssize_t clock_rest(u4 *s, Py_ssize_t n, Py_ssize_t q) {
    for (int b = 1; b >= 0; b--) {
        if (b && CH(q) != ']')
            continue;
        Py_ssize_t r = q + b;
        if (!WS(CH(r)))
            continue;
        Py_ssize_t k = ws(s, n, r);
        if (k < n)
            return k;
    }
    return -1;
}
static Py_ssize_t r_clock(u4 *s, Py_ssize_t n, Groups *g) {
    Py_ssize_t p = hms(s, n, CH(0) == '[' ? 1 : 0, g);
    if (p < 0)
        return -1;
    Py_ssize_t nd = 0;
    if (CH(p) == '.' || CH(p) == ',')
        nd = digs(s, n, p + 1) - (p + 1);
    for (Py_ssize_t f = nd; f >= 0; f--) {
        Py_ssize_t e = clock_rest(s, n, f ? p + 1 + f : p);
        if (e >= 0) {
            g->fs = p + 1;
            g->fl = f;
            g->kind = TS_CLOCK;
            return e;
        }
    }
    return -1;
}
static Py_ssize_t deepspeed_rest(u4 *s, Py_ssize_t n, Py_ssize_t i) {
    if (CH(i) != ']')
        return -1;
    Py_ssize_t k = ws(s, n, i + 1);
    if (CH(k) == '[') {
        Py_ssize_t a = run(s, n, k + 1, clsfile);
        if (a > k + 1 && CH(a) == ':') {
            Py_ssize_t b = digs(s, n, a + 1);
            if (b > a + 1 && CH(b) == ':') {
                Py_ssize_t c = b + 1;
                while (c < n && AW(s[c]))
                    c++;
                if (c > b + 1 && CH(c) == ']')
                    return ws(s, n, c + 1);
            }
        }
    }
    return k;
}
static Py_ssize_t r_deepspeed(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    return CH(0) == '[' ? level(s, n, 1, deepspeed_rest) : -1;
}
static Py_ssize_t pylog_rest(u4 *s, Py_ssize_t n, Py_ssize_t i) {
    if (CH(i) != ':')
        return -1;
    Py_ssize_t k = run(s, n, i + 1, clspl);
    if (CH(k) != ':')
        return -1;
    return k + 1 + (WS(CH(k + 1)) ? 1 : 0);
}
static Py_ssize_t r_pylog(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    return level(s, n, 0, pylog_rest);
}
static Py_ssize_t dash_rest(u4 *s, Py_ssize_t n, Py_ssize_t i) { return lit(s, n, i, " - ") ? i + 3 : -1; }
static Py_ssize_t r_pylog_dash(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    for (int opt = CH(0) == '-' ? 1 : 0; opt >= 0; opt--) {
        Py_ssize_t i = ws(s, n, opt), j = run(s, n, i, clspl);
        if (j == i || !lit(s, n, j, " - "))
            continue;
        Py_ssize_t e = level(s, n, j + 3, dash_rest);
        if (e >= 0)
            return e;
    }
    return -1;
}
static Py_ssize_t hf_rest(u4 *s, Py_ssize_t n, Py_ssize_t i) {
    if (CH(i) != '|')
        return -1;
    Py_ssize_t a = run(s, n, i + 1, clsfile);
    if (a == i + 1 || CH(a) != ':')
        return -1;
    Py_ssize_t b = digs(s, n, a + 1);
    if (b == a + 1 || CH(b) != ']')
        return -1;
    /* the optional group after the greedy \s*: where it fails, the match ends there */
    Py_ssize_t k = ws(s, n, b + 1), j = run(s, n, k, clshf);
    if (j > k && CH(j) == '>' && CH(j + 1) == '>')
        return ws(s, n, j + 2);
    return k;
}
static Py_ssize_t r_hf(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    return CH(0) == '[' ? level(s, n, 1, hf_rest) : -1;
}
static Py_ssize_t hydra_rest(u4 *s, Py_ssize_t n, Py_ssize_t i) {
    if (CH(i) != ']')
        return -1;
    Py_ssize_t k = ws(s, n, i + 1);
    if (CH(k) != '-')
        return -1;
    return ws(s, n, k + 1);
}
static Py_ssize_t r_hydra(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    if (CH(0) != '[')
        return -1;
    Py_ssize_t a = run(s, n, 1, cls5);
    if (a == 1 || CH(a) != ']' || CH(a + 1) != '[')
        return -1;
    return level(s, n, a + 2, hydra_rest);
}
static Py_ssize_t lbracket_rest(u4 *s, Py_ssize_t n, Py_ssize_t i) {
    Py_ssize_t k = ws(s, n, i);
    if (CH(k) != ']')
        return -1;
    return ws(s, n, k + 1);
}
static Py_ssize_t r_level_bracket(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    return CH(0) == '[' ? level(s, n, ws(s, n, 1), lbracket_rest) : -1;
}
static Py_ssize_t lword_rest(u4 *s, Py_ssize_t n, Py_ssize_t i) {
    Py_ssize_t k = ws(s, n, i);
    if (CH(k) == ':' || CH(k) == '|') {
        Py_ssize_t m = ws(s, n, k + 1);
        if (m < n)
            return m;
    }
    if (WS(CH(i)) && CH(k) == '-') {
        Py_ssize_t m = ws(s, n, k + 1);
        if (m > k + 1 && m < n)
            return m;
    }
    return -1;
}
static Py_ssize_t r_level_word(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    return level(s, n, 0, lword_rest);
}
static int clsdot(long c) { return AW(c) || c == '.'; }
static Py_ssize_t r_logger_name(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    Py_ssize_t R = run(s, n, 0, clsdot);
    if (R < 4 || !lit(s, n, R - 3, ".py") || CH(R) != ':')
        return -1;
    Py_ssize_t d = digs(s, n, R + 1);
    if (d == R + 1 || CH(d) != ']' || !WS(CH(d + 1)))
        return -1;
    return d + 2;
}
static Py_ssize_t r_ctrl_c(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    Py_ssize_t k = 0;
    while (CH(k) == '^' && CH(k + 1) == 'C')
        k += 2;
    for (; k > 0; k -= 2)
        if (k < n && !WS(s[k]))
            return k;
    return -1;
}
static Py_ssize_t r_viewer(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    Py_ssize_t w = ws(s, n, 0);
    if (w > 6)
        return -1;
    Py_ssize_t d = digs(s, n, w);
    if (d == w || d - w > 7)
        return -1;
    Py_ssize_t k = ws(s, n, d);
    if (CH(k) != '|' && CH(k) != 0x2502) /* [|│] */
        return -1;
    return k + 1 + (WS(CH(k + 1)) ? 1 : 0);
}
static Py_ssize_t r_viewer_bracket(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    if (CH(0) != '[')
        return -1;
    Py_ssize_t d = digs(s, n, 1);
    if (d == 1 || d - 1 > 7 || CH(d) != ']' || CH(d + 1) != ' ' || d + 2 >= n || WS(s[d + 2]))
        return -1;
    return d + 2;
}
static Py_ssize_t r_gh(u4 *s, Py_ssize_t n, Groups *g) {
    (void)g;
    Py_ssize_t i = CH(0) == 'L' ? 1 : 0, d = digs(s, n, i);
    if (d == i || d - i > 7 || CH(d) != ':' || !WS(CH(d + 1)))
        return -1;
    return d + 2;
}

typedef Py_ssize_t (*Row)(u4 *s, Py_ssize_t n, Groups *g);
/* normalize.PREFIXES, in its order (tests/test_native.py checks the names) */
static const Row ROWS[] = {r_role,     r_rank_bracket, r_rank_colon, r_openmpi,     r_slurm_node,
                           r_actor,    r_raylet,       r_kubectl,    r_compose,     r_iso,
                           r_named_iso, r_glog,        r_glog_old,   r_syslog,      r_ctime,
                           r_dmesg_t,  r_dmesg,        r_clock,      r_deepspeed,   r_pylog,
                           r_pylog_dash, r_hf,         r_hydra,      r_level_bracket, r_level_word,
                           r_logger_name, r_ctrl_c,    r_viewer,     r_viewer_bracket, r_gh};
static const char *ROW_NAMES[] = {
    "torchrun-role", "rank-bracket", "rank-colon", "openmpi", "slurm-node-rank", "actor-pid",
    "raylet", "kubectl", "compose", "iso", "named-iso", "glog", "glog-old", "syslog", "ctime",
    "dmesg-T", "dmesg", "clock", "deepspeed", "py-logging", "py-logging-dash", "hf-logging",
    "hydra", "level-bracket", "level-word", "logger-name", "ctrl-c-echo", "viewer-lineno",
    "viewer-lineno-bracket", "gh-lineno"};
#define NROWS ((int)(sizeof ROWS / sizeof ROWS[0]))
#define RANK_ROWS 5       /* the first five set the rank */
#define BLANK_RANK_ROW(r) ((r) == 0 || (r) == 1 || (r) == 3) /* "[rank3]:" alone: rank 3's blank line */

/* LEADS[c]: the rows (bit i: ROWS[i]) that a line led by ASCII c may match, from each
 * row's first character (a regex's first class); tests/test_native.py checks that the
 * rows it leaves out match no line led so */
static unsigned long LEADS[128];
static void leads_init(void) {
    static const char *first[] = {
        "[", "[", "r", "[", "w.-", "(", "(", "[", "w.-", "[d", "[", "[IWEF", "[", "A", "MTWFS", "[", "[", "[d",
        "[", "TDINWECF", "-s w.<>", "[", "[", "[", "TDINWECF", "w.", "^", "sd", "[", "Ld"};
    for (int r = 0; r < NROWS; r++)
        for (int ch = 0; ch < 128; ch++) {
            int may = 0;
            for (const char *f = first[r]; *f && !may; f++) /* w: \w, d: \d, s: \s, A: [A-Z] */
                may = *f == 'w' ? aw_c(ch) : *f == 'd' ? (ch >= '0' && ch <= '9') : *f == 's' ? ws_c(ch)
                      : *f == 'A' ? UP(ch) : ch == *f;
            if (may)
                LEADS[ch] |= 1ul << r;
        }
}

static Py_ssize_t r_srun(u4 *s, Py_ssize_t n, int *label) {
    Py_ssize_t w = ws(s, n, 0);
    if (w > 3)
        return -1;
    Py_ssize_t d = digs(s, n, w);
    if (d == w || d - w > 4 || CH(d) != ':' || CH(d + 1) != ' ')
        return -1;
    *label = num(s, w, d);
    return d + 2;
}

static long long days_from_civil(long long y, int m, int d) {
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* float("0." + digits), as normalize._frac reads it; -1 where it cannot be read here */
static double frac_of(u4 *s, Py_ssize_t fs, Py_ssize_t fl) {
    if (!fl)
        return 0.0;
    char buf[80];
    if (fl > 70)
        return -1.0;
    buf[0] = '0';
    buf[1] = '.';
    for (Py_ssize_t i = 0; i < fl; i++) {
        if (s[fs + i] < '0' || s[fs + i] > '9')
            return -1.0;
        buf[2 + i] = (char)s[fs + i];
    }
    buf[2 + fl] = 0;
    double v = PyOS_string_to_double(buf, NULL, NULL);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1.0;
    }
    return v;
}

/* the time a row's handler gives (normalize._iso_ts and the rest): 1 and *ts, 0 for
 * None, -1 where it cannot be computed here */
static int ts_of(u4 *s, Groups *g, double *ts) {
    double f = frac_of(s, g->fs, g->fl);
    if (f < 0)
        return -1;
    switch (g->kind) {
    case TS_ISO:
    case TS_CTIME: {
        int mo = g->kind == TS_ISO ? g->mo : g->mon;
        if (g->kind == TS_CTIME && mo == 0)
            return 0;
        if (mo < 1 || mo > 12 || g->y < 1)
            return 0; /* datetime.date refuses it: _epoch gives None */
        long long days = days_from_civil(g->y, mo, 1) + g->d - 1;
        long long secs = (days * 24 + g->h) * 3600 + g->mi * 60 + g->sec;
        *ts = (double)secs + f;
        return 1;
    }
    case TS_GLOG: {
        long long day = ((long long)g->mo * 31 + g->d) * 24 + g->h;
        *ts = (double)(day * 3600 + g->mi * 60 + g->sec) + f + 0.0;
        return 1;
    }
    case TS_SYSLOG: {
        long long v = (((long long)g->mon * 31 + g->d) * 24 + g->h) * 3600 + g->mi * 60 + g->sec;
        *ts = (double)v + 0.0;
        return 1;
    }
    case TS_CLOCK:
        if (g->h > 23 || g->mi > 59 || g->sec > 60)
            return 0;
        *ts = (double)(g->h * 3600 + g->mi * 60 + g->sec) + f + 0.0;
        return 1;
    }
    return 0;
}

/* normalize.BAR_RE's first match from normalize._split_bars' start (`h`: the first
 * "%|") has text after it: the line splits there (glued text), which the Python path does */
static int bar_splits(u4 *s, Py_ssize_t n, Py_ssize_t h) {
    Py_ssize_t start = h >= 3 ? h - 3 : 0;
    for (; h + 1 < n; h++) {
        if (s[h] != '%' || s[h + 1] != '|')
            continue;
        Py_ssize_t p = h;
        while (p > start && h - p < 3 && DG(s[p - 1]))
            p--;
        if (p == h)
            continue; /* \d{1,3}% needs a digit */
        Py_ssize_t q = h + 2, r = q;
        while (r < n && s[r] != '|' && r - q <= 400)
            r++;
        if (CH(r) != '|' || r - q > 400)
            continue;
        Py_ssize_t i = ws(s, n, r + 1), j = i;
        while (j < n && (DG(s[j]) || s[j] == '.'))
            j++;
        if (j == i)
            continue;
        if (CH(j) == 'k' || CH(j) == 'M' || CH(j) == 'G')
            j++;
        if (CH(j) != '/')
            continue;
        Py_ssize_t k = j + 1;
        while (k < n && (DG(s[k]) || s[k] == '.' || s[k] == '?'))
            k++;
        if (k == j + 1)
            continue;
        if (CH(k) == 'k' || CH(k) == 'M' || CH(k) == 'G')
            k++;
        k = ws(s, n, k);
        if (CH(k) != '[')
            continue;
        Py_ssize_t e = k + 1;
        while (e < n && s[e] != ']' && e - (k + 1) <= 80)
            e++;
        if (CH(e) != ']' || e - (k + 1) > 80)
            continue;
        return ws(s, n, e + 1) < n;
    }
    return 0;
}

/* what one pass over a line's characters tells plain_of (CHAR_FLAGS, for ASCII) */
enum { F_BAD = 1, F_CR = 2, F_MARK = 4 };
static unsigned char CHAR_FLAGS[128];
static void char_flags_init(void) {
    for (int c = 0; c < 128; c++)
        CHAR_FLAGS[c] = ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) ? F_BAD : 0;
    CHAR_FLAGS['\r'] = F_CR;
    CHAR_FLAGS['\\'] = CHAR_FLAGS['/'] = CHAR_FLAGS['%'] = F_MARK;
}

/* the peel of s[0..n), a line as normalize_plain reads it; `flags`: CHAR_FLAGS of its
 * characters together; `ascii`: the line's bytes where it is ASCII (s is a copy) */
static PyObject *plain_of(u4 *s, Py_ssize_t n, int flags, const unsigned char *ascii) {
    if (flags & F_BAD)
        Py_RETURN_NONE; /* an escape or a control character: ANSI_RE, in Python */
    if (n && s[n - 1] == '\r')
        n--;
    if (flags & F_CR) { /* resolve_redraws: the last frame with more than white space */
        Py_ssize_t e = n, fs = 0, fe = 0;
        for (Py_ssize_t i = n; i >= 0; i--) {
            if (i > 0 && s[i - 1] != '\r')
                continue;
            if (ws(s, e, i) < e) {
                fs = i;
                fe = e;
                break;
            }
            e = i - 1;
        }
        s += fs;
        n = fe - fs;
        if (ascii != NULL)
            ascii += fs;
    }
    if (flags & F_MARK) {
        for (Py_ssize_t i = 0; i + 1 < n; i++) {
            Py_UCS4 c = s[i], d = s[i + 1];
            if (c == '\\' && d == 'n')
                Py_RETURN_NONE; /* an escaped newline: split_glued */
            if (c == '/' && d == '?' && CH(i + 2) == ' ' && CH(i + 3) == '[')
                Py_RETURN_NONE; /* a bar of unknown total */
        }
        for (Py_ssize_t i = 0; i + 1 < n; i++)
            if (s[i] == '%' && s[i + 1] == '|') {
                if (bar_splits(s, n, i))
                    Py_RETURN_NONE;
                break;
            }
    }
    while (n && WS(s[n - 1]))
        n--;
    Py_ssize_t pos = 0;
    long long rank = 0;
    int has_rank = 0, has_ts = 0, label = -1, label_first = 0;
    double ts = 0.0;
    g_bail = 0;
    for (int it = 0; it < 8; it++) {
        u4 *t = s + pos;
        Py_ssize_t tn = n - pos;
        long c = tn ? (long)t[0] : -1;
        if (WS(c) || DG(c)) {
            int v;
            Py_ssize_t e = r_srun(t, tn, &v);
            if (g_bail)
                Py_RETURN_NONE;
            if (e >= 0) {
                if (label >= 0)
                    Py_RETURN_NONE; /* two labels: the source state's steps, in Python */
                label = v;
                label_first = !has_rank;
                pos += e;
                continue;
            }
        }
        Groups g;
        Py_ssize_t e = -1;
        int row = 0;
        unsigned long rows = c >= 0 && c < 128 ? LEADS[c] : ~0ul; /* the rows c may start */
        for (; row < NROWS; row++) {
            if (!(rows >> row & 1))
                continue;
            memset(&g, 0, sizeof g);
            e = ROWS[row](t, tn, &g);
            if (g.bail || g_bail)
                Py_RETURN_NONE;
            if (e >= 0)
                break;
        }
        if (e < 0)
            break;
        if (!(0 < e && e < tn)) {
            if (e && BLANK_RANK_ROW(row)) {
                if (!has_rank) {
                    rank = g.r;
                    has_rank = 1;
                }
                pos = n;
            }
            break;
        }
        if (row < RANK_ROWS) {
            if (!has_rank) {
                rank = g.r;
                has_rank = 1;
            }
        } else if (g.kind != TS_NONE && !has_ts) {
            int got = ts_of(t, &g, &ts);
            if (got < 0)
                Py_RETURN_NONE;
            has_ts = got;
        }
        pos += e;
    }
    PyObject *text;
    if (ascii != NULL) {
        text = PyUnicode_New(n - pos, 127);
        if (text != NULL)
            memcpy(PyUnicode_1BYTE_DATA(text), ascii + pos, (size_t)(n - pos));
    } else {
        text = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, s + pos, n - pos);
    }
    if (text == NULL)
        return NULL;
    PyObject *r = has_rank ? PyLong_FromLongLong(rank) : Py_NewRef(Py_None);
    PyObject *tso = has_ts ? PyFloat_FromDouble(ts) : Py_NewRef(Py_None);
    PyObject *lab = label >= 0 ? PyLong_FromLong(label) : Py_NewRef(Py_None);
    PyObject *out = (r && tso && lab) ? PyTuple_New(5) : NULL;
    if (out == NULL) {
        Py_DECREF(text);
        Py_XDECREF(r);
        Py_XDECREF(tso);
        Py_XDECREF(lab);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, text);
    PyTuple_SET_ITEM(out, 1, r);
    PyTuple_SET_ITEM(out, 2, tso);
    PyTuple_SET_ITEM(out, 3, lab);
    PyTuple_SET_ITEM(out, 4, Py_NewRef(label_first ? Py_True : Py_False));
    return out;
}

/* plain(data) -> (text, rank, ts, label, label_first) | None: data decoded as
 * normalize._clean decodes it (UTF-8, errors replaced), then `plain_of` */
static PyObject *plain(PyObject *Py_UNUSED(self), PyObject *arg) {
    if (!PyBytes_Check(arg))
        Py_RETURN_NONE;
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(arg);
    Py_ssize_t nb = PyBytes_GET_SIZE(arg), i = 0;
    Py_UCS4 local[512], *buf = local;
    Py_ssize_t n = nb;
    int flags = 0, wide = 0;
    if (nb > (Py_ssize_t)(sizeof local / sizeof local[0])) {
        buf = PyMem_Malloc((size_t)nb * sizeof(Py_UCS4));
        if (buf == NULL)
            return PyErr_NoMemory();
    }
    for (; i < nb; i++) {
        unsigned char c = b[i];
        if (c >= 0x80) {
            wide = 1;
            break;
        }
        buf[i] = c;
        flags |= CHAR_FLAGS[c];
    }
    if (wide) {
        if (buf != local)
            PyMem_Free(buf);
        PyObject *dec = PyUnicode_DecodeUTF8((const char *)b, nb, "replace");
        if (dec == NULL)
            return NULL;
        n = PyUnicode_GET_LENGTH(dec);
        buf = PyUnicode_AsUCS4Copy(dec);
        Py_DECREF(dec);
        if (buf == NULL)
            return NULL;
        flags = 0;
        for (i = 0; i < n; i++)
            if (buf[i] < 128)
                flags |= CHAR_FLAGS[buf[i]];
    }
    PyObject *out = plain_of(buf, n, flags, wide ? NULL : b);
    if (buf != local)
        PyMem_Free(buf);
    return out;
}
/* ---- bar(text): a tqdm bar's count and clock, as progress._bar_of reads them ----------
 * (description, count, total, elapsed seconds) of _BAR_RE's first match, None where
 * there is none, False for a line this does not read (a number too long, a digit of
 * another script): the Python path reads it. */
static int bar_clock(u4 *s, Py_ssize_t n, Py_ssize_t i, long long *hours, long long *mins, long long *secs) {
    /* (?:(\d+):)?(\d{1,2}):(\d{2})< at i, backtracking as the regex does: 1 read, 0 no
     * match, -1 an hour count too long to read here */
    Py_ssize_t d = i;
    while (d < n && dg_c(s[d]))
        d++;
    for (int with = 1; with >= 0; with--) {
        Py_ssize_t j = i;
        long long h = 0;
        if (with) {
            if (d == i || d >= n || s[d] != ':')
                continue;
            j = d + 1;
        }
        for (int w = 2; w >= 1; w--) {
            Py_ssize_t k = j + w;
            if (k + 3 >= n)
                continue;
            int ok = 1;
            for (Py_ssize_t x = j; x < k; x++)
                ok &= dg_c(s[x]);
            if (!ok || s[k] != ':' || !dg_c(s[k + 1]) || !dg_c(s[k + 2]) || s[k + 3] != '<')
                continue;
            if (with) {
                if (d - i > 15)
                    return -1;
                for (Py_ssize_t x = i; x < d; x++)
                    h = ascii_digit(s[x]) ? h * 10 + (long long)(s[x] - '0') : 0;
            }
            long long m = 0;
            for (Py_ssize_t x = j; x < k; x++)
                m = ascii_digit(s[x]) ? m * 10 + (long long)(s[x] - '0') : 0;
            *hours = h;
            *mins = m;
            *secs = ascii_digit(s[k + 1]) && ascii_digit(s[k + 2]) ? (s[k + 1] - '0') * 10 + (s[k + 2] - '0') : 0;
            return 1;
        }
    }
    return 0;
}

static PyObject *bar_of(PyObject *text, u4 *s, Py_ssize_t n);

static PyObject *bar(PyObject *Py_UNUSED(self), PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "bar() takes a str");
        return NULL;
    }
    Py_UCS4 *buf = PyUnicode_AsUCS4Copy(arg);
    if (buf == NULL)
        return NULL;
    g_bail = 0;
    PyObject *out = bar_of(arg, buf, PyUnicode_GET_LENGTH(arg));
    PyMem_Free(buf);
    if (out == Py_None && g_bail) {
        Py_DECREF(out);
        Py_RETURN_FALSE; /* a digit of another script in a number: int() reads it, in Python */
    }
    return out;
}

static PyObject *bar_of(PyObject *text, u4 *s, Py_ssize_t n) {
    for (Py_ssize_t k = 1; k < n; k++) {
        if (s[k] != '/' || !dg_c(s[k - 1]))
            continue;
        Py_ssize_t a = k;
        while (a > 0 && dg_c(s[a - 1]))
            a--;
        Py_ssize_t t = k + 1;
        while (t < n && dg_c(s[t]))
            t++;
        if (t == k + 1 || t + 1 >= n || s[t] != ' ' || s[t + 1] != '[')
            continue;
        Py_ssize_t i = t + 2;
        long long days = 0, hours = 0, mins = 0, secs = 0;
        int found = 0;
        /* (?:(\d+) days?, )? */
        Py_ssize_t d = i;
        while (d < n && dg_c(s[d]))
            d++;
        if (d > i && d + 4 <= n && s[d] == ' ' && s[d + 1] == 'd' && s[d + 2] == 'a' && s[d + 3] == 'y') {
            Py_ssize_t e = d + 4;
            if (e < n && s[e] == 's')
                e++;
            if (e + 2 <= n && s[e] == ',' && s[e + 1] == ' ')
                found = bar_clock(s, n, e + 2, &hours, &mins, &secs);
            if (found > 0 && d - i > 15)
                found = -1;
            for (Py_ssize_t x = i; x < d && found > 0; x++)
                days = ascii_digit(s[x]) ? days * 10 + (long long)(s[x] - '0') : 0;
        }
        if (!found)
            found = bar_clock(s, n, i, &hours, &mins, &secs);
        if (found < 0 || g_bail)
            Py_RETURN_FALSE;
        if (!found)
            continue;
        if (k - a > 18 || t - (k + 1) > 18)
            Py_RETURN_FALSE;
        /* desc: text[:start].split("%|")[0].rstrip(" 0123456789") */
        Py_ssize_t e = a;
        for (Py_ssize_t x = 0; x + 1 < a; x++)
            if (s[x] == '%' && s[x + 1] == '|') {
                e = x;
                break;
            }
        while (e > 0 && (s[e - 1] == ' ' || dg_c(s[e - 1])))
            e--;
        long long cnt = 0, tot = 0;
        for (Py_ssize_t x = a; x < k; x++)
            cnt = ascii_digit(s[x]) ? cnt * 10 + (long long)(s[x] - '0') : 0;
        for (Py_ssize_t x = k + 1; x < t; x++)
            tot = ascii_digit(s[x]) ? tot * 10 + (long long)(s[x] - '0') : 0;
        if (g_bail)
            Py_RETURN_FALSE;
        double elapsed = (double)(days * 86400 + hours * 3600 + mins * 60 + secs);
        PyObject *desc = PyUnicode_Substring(text, 0, e);
        if (desc == NULL)
            return NULL;
        PyObject *out = Py_BuildValue("(NLLd)", desc, cnt, tot, elapsed);
        return out;
    }
    Py_RETURN_NONE;
}

/* ---- phase(text): the phase a line marks, as tables.PHASES_ANY searches it ----------
 * The leftmost position where a marker of tables.PHASE_MARKERS matches, and there the
 * first phase in table order: its index in PHASE_NAMES, or None. Each marker is matched
 * as its regex matches (Unicode \b, \d, \w, \S), tried where its first character is. */
static const char *PHASE_NAMES[] = {"distributed-init", "checkpoint-loading", "model-loading", "data-loading",
                                    "compiling", "checkpoint-saving", "evaluation", "training"};
enum { P_DIST, P_CKPT_LOAD, P_MODEL, P_DATA, P_COMPILE, P_CKPT_SAVE, P_EVAL, P_TRAIN };

/* \b at i */
static int wb(u4 *s, Py_ssize_t n, Py_ssize_t i) {
    int before = i > 0 && aw_c((long)s[i - 1]), after = i < n && aw_c((long)s[i]);
    return before != after;
}
/* one of `alts` (NULL-ended) at i, then `then` there: the end, or -1 */
static Py_ssize_t opt_then(u4 *s, Py_ssize_t n, Py_ssize_t i, const char **alts, const char *then) {
    for (const char **a = alts; *a; a++)
        if (lit(s, n, i, *a) && lit(s, n, i + (Py_ssize_t)strlen(*a), then))
            return i + (Py_ssize_t)strlen(*a) + (Py_ssize_t)strlen(then);
    return lit(s, n, i, then) ? i + (Py_ssize_t)strlen(then) : -1;
}
/* [Ll]oading (?:the )?(?:distributed |sharded |latest )?checkpoint\b(?! shards) */
static int m_loading_ckpt(u4 *s, Py_ssize_t n, Py_ssize_t p) {
    static const char *Q[] = {"distributed ", "sharded ", "latest ", NULL};
    if (!lit(s, n, p + 1, "oading "))
        return 0;
    Py_ssize_t i = p + 8;
    for (int the = 1; the >= 0; the--) {
        Py_ssize_t j = i;
        if (the) {
            if (!lit(s, n, j, "the "))
                continue;
            j += 4;
        }
        for (int q = 0; q <= 3; q++) {
            Py_ssize_t k = j;
            if (q < 3) {
                if (!lit(s, n, k, Q[q]))
                    continue;
                k += (Py_ssize_t)strlen(Q[q]);
            }
            if (lit(s, n, k, "checkpoint") && wb(s, n, k + 10) && !lit(s, n, k + 10, " shards"))
                return 1;
        }
    }
    return 0;
}
/* [Rr]esum(?:ing|e) (?:training )?from (?:the )?(?:latest )?checkpoint */
static int m_resume(u4 *s, Py_ssize_t n, Py_ssize_t p) {
    if (!lit(s, n, p + 1, "esum"))
        return 0;
    Py_ssize_t i = p + 5;
    if (lit(s, n, i, "ing "))
        i += 4;
    else if (lit(s, n, i, "e "))
        i += 2;
    else
        return 0;
    static const char *TR[] = {"training ", NULL}, *THE[] = {"the ", NULL}, *LA[] = {"latest ", NULL};
    (void)THE;
    (void)LA;
    Py_ssize_t j = opt_then(s, n, i, TR, "from ");
    if (j < 0)
        return 0;
    /* (?:the )?(?:latest )?checkpoint: every choice, greedy first */
    for (int the = 1; the >= 0; the--) {
        Py_ssize_t k = j;
        if (the) {
            if (!lit(s, n, k, "the "))
                continue;
            k += 4;
        }
        if ((lit(s, n, k, "latest ") && lit(s, n, k + 7, "checkpoint")) || lit(s, n, k, "checkpoint"))
            return 1;
    }
    return 0;
}
/* Loading (?:\d+ )?(?:target |draft |base |pretrained )?models?\b */
static int m_loading_model(u4 *s, Py_ssize_t n, Py_ssize_t p) {
    static const char *Q[] = {"target ", "draft ", "base ", "pretrained ", NULL};
    if (!lit(s, n, p, "Loading "))
        return 0;
    Py_ssize_t i = p + 8, d = i;
    while (d < n && dg_c((long)s[d]))
        d++;
    for (int num = 1; num >= 0; num--) {
        Py_ssize_t j = i;
        if (num) {
            if (d == i || CH(d) != ' ')
                continue;
            j = d + 1;
        }
        for (int q = 0; q <= 4; q++) {
            Py_ssize_t k = j;
            if (q < 4) {
                if (!lit(s, n, k, Q[q]))
                    continue;
                k += (Py_ssize_t)strlen(Q[q]);
            }
            if (!lit(s, n, k, "model"))
                continue;
            if ((CH(k + 5) == 's' && wb(s, n, k + 6)) || wb(s, n, k + 5))
                return 1;
        }
    }
    return 0;
}
/* Target \d+ on \S+ */
static int m_target(u4 *s, Py_ssize_t n, Py_ssize_t p) {
    if (!lit(s, n, p, "Target "))
        return 0;
    Py_ssize_t d = p + 7;
    while (d < n && dg_c((long)s[d]))
        d++;
    return d > p + 7 && lit(s, n, d, " on ") && d + 4 < n && !ws_c((long)s[d + 4]);
}
/* Instantiating \w+ model */
static int m_instantiating(u4 *s, Py_ssize_t n, Py_ssize_t p) {
    if (!lit(s, n, p, "Instantiating "))
        return 0;
    Py_ssize_t w = p + 14;
    while (w < n && aw_c((long)s[w]))
        w++;
    return w > p + 14 && lit(s, n, w, " model");
}
/* Map(?: \(num_proc=\d+\))?: */
static int m_map(u4 *s, Py_ssize_t n, Py_ssize_t p) {
    if (!lit(s, n, p, "Map"))
        return 0;
    if (lit(s, n, p + 3, " (num_proc=")) {
        Py_ssize_t d = p + 14;
        while (d < n && dg_c((long)s[d]))
            d++;
        if (d > p + 14 && lit(s, n, d, "):"))
            return 1;
    }
    return CH(p + 3) == ':';
}
/* [Ss]aving (?:a )?(?:full |model |sharded |distributed )?checkpoint */
static int m_saving_ckpt(u4 *s, Py_ssize_t n, Py_ssize_t p) {
    static const char *Q[] = {"full ", "model ", "sharded ", "distributed ", NULL};
    if (!lit(s, n, p + 1, "aving "))
        return 0;
    for (int a = 1; a >= 0; a--) {
        Py_ssize_t j = p + 7;
        if (a) {
            if (!lit(s, n, j, "a "))
                continue;
            j += 2;
        }
        if (opt_then(s, n, j, Q, "checkpoint") >= 0)
            return 1;
    }
    return 0;
}
/* (\bstep|\biter(?:ation)?|\bepoch)[ =:]+\d+ after the word at i */
static int sep_digit(u4 *s, Py_ssize_t n, Py_ssize_t i) {
    Py_ssize_t j = i;
    while (j < n && (s[j] == ' ' || s[j] == '=' || s[j] == ':'))
        j++;
    return j > i && j < n && dg_c((long)s[j]);
}
/* \d+/\d+ \[(?:\d+:)?\d+:\d+< */
static Py_ssize_t digit_run(u4 *s, Py_ssize_t n, Py_ssize_t i) {
    while (i < n && dg_c((long)s[i]))
        i++;
    return i;
}
static int m_bar_clock(u4 *s, Py_ssize_t n, Py_ssize_t p) {
    Py_ssize_t a = digit_run(s, n, p);
    if (a == p || CH(a) != '/')
        return 0;
    Py_ssize_t b = digit_run(s, n, a + 1);
    if (b == a + 1 || !lit(s, n, b, " ["))
        return 0;
    Py_ssize_t i = b + 2, d = digit_run(s, n, i);
    for (int with = 1; with >= 0; with--) {
        Py_ssize_t j = i;
        if (with) {
            if (d == i || CH(d) != ':')
                continue;
            j = d + 1;
        }
        Py_ssize_t e = digit_run(s, n, j);
        if (e == j || CH(e) != ':')
            continue;
        Py_ssize_t f = digit_run(s, n, e + 1);
        if (f > e + 1 && CH(f) == '<')
            return 1;
    }
    return 0;
}

/* the first phase (table order) with a marker matching at p, or -1 */
static int phase_at(u4 *s, Py_ssize_t n, Py_ssize_t p) {
    long c = (long)s[p];
    switch (c) {
    case 'i':
        if (lit(s, n, p, "init_process_group"))
            return P_DIST;
        if (lit(s, n, p, "inductor"))
            return P_COMPILE;
        if (wb(s, n, p) && lit(s, n, p, "iter")) {
            Py_ssize_t i = lit(s, n, p + 4, "ation") ? p + 9 : p + 4;
            if (sep_digit(s, n, i) || (i != p + 4 && sep_digit(s, n, p + 4)))
                return P_TRAIN;
        }
        return -1;
    case 'I':
        if (lit(s, n, p, "Initializing ") &&
            (lit(s, n, p + 13, "the process group") || lit(s, n, p + 13, "process group")))
            return P_DIST;
        if (m_instantiating(s, n, p))
            return P_MODEL;
        return -1;
    case 'R':
    case 'r':
        if (lit(s, n, p + 1, "endezvous"))
            return P_DIST;
        if (m_resume(s, n, p))
            return P_CKPT_LOAD;
        return -1;
    case 'M':
        if (lit(s, n, p, "MASTER_ADDR"))
            return P_DIST;
        if (m_map(s, n, p))
            return P_DATA;
        return -1;
    case 'N':
        if (lit(s, n, p, "NCCL INFO ") &&
            (lit(s, n, p + 10, "Bootstrap") || lit(s, n, p + 10, "NET/") || lit(s, n, p + 10, "cudaDriverVersion") ||
             lit(s, n, p + 10, "comm 0x")))
            return P_DIST;
        return -1;
    case 'A':
        return lit(s, n, p, "Added key: store_based_barrier") ? P_DIST : -1;
    case 'L':
        if (m_loading_ckpt(s, n, p))
            return P_CKPT_LOAD;
        if (m_loading_model(s, n, p) || lit(s, n, p, "Loading checkpoint shards") || lit(s, n, p, "Loading weights") ||
            lit(s, n, p, "Loading model"))
            return P_MODEL;
        if (lit(s, n, p, "Loading ") && (lit(s, n, p + 8, "the data") || lit(s, n, p + 8, "data")))
            return P_DATA;
        return -1;
    case 'l':
        if (m_loading_ckpt(s, n, p))
            return P_CKPT_LOAD;
        if (wb(s, n, p) && lit(s, n, p, "load_checkpoint") && wb(s, n, p + 15))
            return P_CKPT_LOAD;
        if (lit(s, n, p, "load_state_dict"))
            return P_MODEL;
        return -1;
    case 'T':
        if (m_target(s, n, p))
            return P_MODEL;
        if (lit(s, n, p, "Tokeniz") && (lit(s, n, p + 7, "ing") || lit(s, n, p + 7, "ation")))
            return P_DATA;
        return -1;
    case 'f':
        return lit(s, n, p, "from_pretrained") ? P_MODEL : -1;
    case 'B':
        if (lit(s, n, p, "Building model"))
            return P_MODEL;
        if (lit(s, n, p, "Building dataset"))
            return P_DATA;
        return -1;
    case 'G':
        return lit(s, n, p, "Generating ") && (lit(s, n, p + 11, "train split") || lit(s, n, p + 11, "test split"))
                   ? P_DATA
                   : -1;
    case 'C':
        if ((lit(s, n, p, "Compiling") && wb(s, n, p + 9)) || lit(s, n, p, "Compile time"))
            return P_COMPILE;
        return -1;
    case 't':
        if (lit(s, n, p, "torch.compile") || lit(s, n, p, "torch._dynamo") || lit(s, n, p, "triton.compile"))
            return P_COMPILE;
        return -1;
    case 'S':
    case 's':
        if (m_saving_ckpt(s, n, p))
            return P_CKPT_SAVE;
        if (lit(s, n, p, "Saving model") || lit(s, n, p, "save_pretrained") || lit(s, n, p, "Saving state") ||
            lit(s, n, p, "Saved checkpoint"))
            return P_CKPT_SAVE;
        if (wb(s, n, p) && lit(s, n, p, "step") && sep_digit(s, n, p + 4))
            return P_TRAIN;
        return -1;
    case 'W':
        return lit(s, n, p, "Writing checkpoint") ? P_CKPT_SAVE : -1;
    case 'c':
        return lit(s, n, p, "checkpoint saved") ? P_CKPT_SAVE : -1;
    case '*':
        if (lit(s, n, p, "***** Running Evaluation"))
            return P_EVAL;
        if (lit(s, n, p, "***** Running training"))
            return P_TRAIN;
        return -1;
    case 'E':
        return lit(s, n, p, "Evaluating") && wb(s, n, p + 10) ? P_EVAL : -1;
    case 'e':
        if (wb(s, n, p) && lit(s, n, p, "eval")) {
            Py_ssize_t i = lit(s, n, p + 4, "uation") ? p + 10 : p + 4;
            if (lit(s, n, i, " step") || lit(s, n, i, " loss"))
                return P_EVAL;
            if (i != p + 4 && (lit(s, n, p + 4, " step") || lit(s, n, p + 4, " loss")))
                return P_EVAL;
        }
        if (wb(s, n, p) && lit(s, n, p, "epoch") && sep_digit(s, n, p + 5))
            return P_TRAIN;
        return -1;
    case '{':
        return lit(s, n, p, "{'loss': ") ? P_TRAIN : -1;
    }
    if (dg_c(c) && m_bar_clock(s, n, p))
        return P_TRAIN;
    return -1;
}

static PyObject *phase(PyObject *Py_UNUSED(self), PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "phase() takes a str");
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(arg);
    Py_UCS4 local[512], *buf = local;
    if (PyUnicode_IS_ASCII(arg) && n <= 512) {
        const unsigned char *b = PyUnicode_1BYTE_DATA(arg);
        for (Py_ssize_t i = 0; i < n; i++)
            buf[i] = b[i];
    } else {
        buf = PyUnicode_AsUCS4Copy(arg);
        if (buf == NULL)
            return NULL;
    }
    int got = -1;
    for (Py_ssize_t p = 0; p < n && got < 0; p++)
        got = phase_at(buf, n, p);
    if (buf != local)
        PyMem_Free(buf);
    if (got < 0)
        Py_RETURN_NONE;
    return PyLong_FromLong(got);
}

/* ---- line(source, lineno, text, rank, seq, ts): model.Line without its __init__ ------
 * model.new_line's work: the frozen dataclass's slots set directly (its `raw` to ""),
 * once line_type(Line) has said where each slot is. Fields that are not str, int,
 * float or None are refused: the line is then untracked by the cyclic collector. */
static PyTypeObject *line_type;
static Py_ssize_t line_slot[7]; /* source, lineno, text, rank, seq, ts, raw */
static PyObject *empty_str;

static PyObject *line_type_set(PyObject *Py_UNUSED(self), PyObject *arg) {
    static const char *fields[7] = {"source", "lineno", "text", "rank", "seq", "ts", "raw"};
    if (!PyType_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "line_type() takes the Line class");
        return NULL;
    }
    PyTypeObject *t = (PyTypeObject *)arg;
    Py_ssize_t slot[7];
    for (int i = 0; i < 7; i++) {
        PyObject *d = PyDict_GetItemString(t->tp_dict, fields[i]);
        if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type) ||
            ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
            PyErr_Format(PyExc_TypeError, "line_type(): %s is not a slot", fields[i]);
            return NULL;
        }
        slot[i] = ((PyMemberDescrObject *)d)->d_member->offset;
    }
    if (empty_str == NULL && (empty_str = PyUnicode_FromString("")) == NULL)
        return NULL;
    Py_XSETREF(line_type, (PyTypeObject *)Py_NewRef(arg));
    memcpy(line_slot, slot, sizeof slot);
    Py_RETURN_NONE;
}

static PyObject *make_line(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (line_type == NULL || nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "line() takes 6 arguments, after line_type()");
        return NULL;
    }
    for (int i = 0; i < 6; i++) {
        PyObject *a = args[i];
        if (!(a == Py_None || PyUnicode_CheckExact(a) || PyLong_CheckExact(a) || PyFloat_CheckExact(a))) {
            PyErr_SetString(PyExc_TypeError, "line() takes str, int, float or None");
            return NULL;
        }
    }
    PyObject *obj = line_type->tp_alloc(line_type, 0);
    if (obj == NULL)
        return NULL;
    for (int i = 0; i < 6; i++)
        *(PyObject **)((char *)obj + line_slot[i]) = Py_NewRef(args[i]);
    *(PyObject **)((char *)obj + line_slot[6]) = Py_NewRef(empty_str);
    /* a Line holds strings, numbers and None, and is frozen: it can be in no cycle, so
     * the cyclic collector need not walk the million of them a big log makes (CPython
     * untracks such tuples and dicts the same way) */
    if (PyObject_GC_IsTracked(obj))
        PyObject_GC_UnTrack(obj);
    return obj;
}

/* the regexes the rows and markers above were written from (normalize.PREFIXES then
 * SRUN_LABEL; progress._BAR_RE; tables.PHASE_MARKERS): triage uses plain(), bar() and
 * phase() only where its tables still say these, so an edit there is never read by
 * stale C (native.written_from) */
static const char *PREFIX_PATTERNS[] = {
    "\\[(?:default|trainer|worker|role)(?P<r>\\d+)\\]:\\s?",
    "\\[rank(?P<r>\\d+)\\]:\\s?",
    "rank(?P<r>\\d+)\\]?:\\s",
    "\\[\\d+,(?P<r>\\d+)\\]<(?:stdout|stderr)>:\\s?",
    "[\\w.-]+-\\d+: (?P<r>\\d{1,4}): ",
    "\\((?:[A-Za-z_][\\w.-]*(?:, rank=\\d+)?,? )?pid=\\d+(?:, ip=[\\w.:-]+)?\\)\\s?",
    "\\(raylet(?:, ip=[\\w.:-]+)?\\)\\s?",
    "\\[pod/[\\w.-]+/[\\w.-]+\\]\\s",
    "[\\w.-]{2,40}\\s+\\|\\s(?=\\S)|[\\w.-]{1,38}[-_]\\d{1,3} +\\| ",
    "\\[?(?P<y>\\d{4})[-/](?P<mo>\\d{2})[-/](?P<d>\\d{2})[T _](?P<h>\\d{2}):(?P<mi>\\d{2}):(?P<s>\\d{2})(?:[.,](?P<frac>\\d{1,9}))?(?:Z|[+-]\\d{2}:?\\d{2})?\\]?(?:\\s+|:\\s*|\\s*\\|\\s*|(?<=\\])(?=\\[))",
    "\\[[A-Za-z][\\w.-]{0,39} (?P<y>\\d{4})[-/](?P<mo>\\d{2})[-/](?P<d>\\d{2})[T _](?P<h>\\d{2}):(?P<mi>\\d{2}):(?P<s>\\d{2})(?:[.,](?P<frac>\\d{1,9}))?(?:Z|[+-]\\d{2}:?\\d{2})?\\]\\s?",
    "\\[?[IWEF](?P<mo>\\d{2})(?P<d>\\d{2}) (?P<h>\\d{2}):(?P<mi>\\d{2}):(?P<s>\\d{2})(?:\\.(?P<frac>\\d{1,9}))?(?:\\s+\\d+)?\\s+[^\\]\\s]+:\\d+\\]\\s?",
    "\\[[IWEF] [\\w./-]+:\\d+\\]\\s?",
    "(?P<mon>[A-Z][a-z]{2}) +(?P<d>\\d{1,2}) (?P<h>\\d{2}):(?P<mi>\\d{2}):(?P<s>\\d{2})(?:\\.\\d+)? [\\w.-]+ [\\w./@-]+(?:\\[\\d+\\])?:\\s",
    "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<mon>[A-Z][a-z]{2}) +(?P<d>\\d{1,2}) (?P<h>\\d{2}):(?P<mi>\\d{2}):(?P<s>\\d{2}) (?P<y>\\d{4})(?:\\s+|(?=\\[))",
    "\\[[A-Z][a-z]{2} (?P<mon>[A-Z][a-z]{2}) +(?P<d>\\d{1,2}) (?P<h>\\d{2}):(?P<mi>\\d{2}):(?P<s>\\d{2}) (?P<y>\\d{4})\\]\\s?",
    "\\[\\s*\\d+\\.\\d{3,}\\]\\s?",
    "\\[?(?P<h>\\d{2}):(?P<mi>\\d{2}):(?P<s>\\d{2})(?:[.,](?P<frac>\\d+))?\\]?\\s+(?=\\S)",
    "\\[(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|FATAL)\\]\\s*(?:\\[[\\w./-]+:\\d+:\\w+\\]\\s*)?",
    "(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|FATAL):[\\w.<>-]*:\\s?",
    "-?\\s*[\\w.<>-]+ - (?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|FATAL) - ",
    "\\[(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|FATAL)\\|[\\w./-]+:\\d+\\]\\s*(?:[\\d\\-: ,]+>>\\s*)?",
    "\\[[\\w.-]+\\]\\[(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|FATAL)\\]\\s*-\\s*",
    "\\[\\s*(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|FATAL)\\s*\\]\\s*",
    "(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|FATAL)(?:\\s*[:|]\\s*|\\s+-\\s+)(?=\\S)",
    "[\\w.]+\\.py:\\d+\\]\\s",
    "(?:\\^C)+(?=\\S)",
    "\\s{0,6}\\d{1,7}\\s*[|│]\\s?",
    "\\[\\d{1,7}\\] (?=\\S)",
    "L?\\d{1,7}:\\s",
    "\\s{0,3}(?P<r>\\d{1,4}): "};
static const char *BAR_PATTERNS[] = {"(\\d+)/(\\d+) \\[(?:(\\d+) days?, )?(?:(\\d+):)?(\\d{1,2}):(\\d{2})<"};
static const char *PHASE_PATTERNS[] = {
    "init_process_group",
    "Initializing (?:the )?process group",
    "[Rr]endezvous",
    "MASTER_ADDR",
    "NCCL INFO (?:Bootstrap|NET/|cudaDriverVersion|comm 0x)",
    "Added key: store_based_barrier",
    "[Ll]oading (?:the )?(?:distributed |sharded |latest )?checkpoint\\b(?! shards)",
    "[Rr]esum(?:ing|e) (?:training )?from (?:the )?(?:latest )?checkpoint",
    "\\bload_checkpoint\\b",
    "Loading (?:\\d+ )?(?:target |draft |base |pretrained )?models?\\b",
    "Loading checkpoint shards",
    "Target \\d+ on \\S+",
    "from_pretrained",
    "Loading weights",
    "Instantiating \\w+ model",
    "Loading model",
    "load_state_dict",
    "Building model",
    "Loading (?:the )?(?:dataset|data)",
    "Tokeniz(?:ing|ation)",
    "Map(?: \\(num_proc=\\d+\\))?:",
    "Generating (?:train|test) split",
    "Building dataset",
    "Compiling\\b",
    "torch\\.compile",
    "torch\\._dynamo",
    "inductor",
    "triton\\.compile",
    "Compile time",
    "[Ss]aving (?:a )?(?:full |model |sharded |distributed )?checkpoint",
    "Saving model",
    "save_pretrained",
    "Saving state",
    "Writing checkpoint",
    "checkpoint saved",
    "Saved checkpoint",
    "\\*\\*\\*\\*\\* Running Evaluation",
    "Evaluating\\b",
    "\\beval(?:uation)? (?:step|loss)",
    "\\bstep[ =:]+\\d+",
    "\\biter(?:ation)?[ =:]+\\d+",
    "\\{'loss': ",
    "\\bepoch[ =:]+\\d+",
    "\\*\\*\\*\\*\\* Running training",
    "\\d+/\\d+ \\[(?:\\d+:)?\\d+:\\d+<"};

#define COUNT(a) ((int)(sizeof a / sizeof a[0]))

/* a module constant: a tuple of the strings of `items` */
static int add_strings(PyObject *m, const char *name, const char **items, int count) {
    PyObject *t = PyTuple_New(count);
    if (t == NULL)
        return -1;
    for (int i = 0; i < count; i++) {
        PyObject *s = PyUnicode_FromString(items[i]);
        if (s == NULL) {
            Py_DECREF(t);
            return -1;
        }
        PyTuple_SET_ITEM(t, i, s);
    }
    if (PyModule_AddObject(m, name, t) < 0) {
        Py_DECREF(t);
        return -1;
    }
    return 0;
}

static PyMethodDef methods[] = {
    {"metrics", metrics, METH_O,
     "metrics(text) -> (step, loss, grad_norm, tok_s) | None: an ASCII line's values as the "
     "progress reader's regexes read them; None for any other line"},
    {"extremes", extremes, METH_VARARGS,
     "extremes(data, block) -> [(start, end)]: the lines of each block's lowest and highest "
     "loss, grad norm and tokens/s, and its first non-finite loss"},
    {"bar", bar, METH_O,
     "bar(text) -> (desc, count, total, elapsed) | None | False: a tqdm bar as "
     "progress._bar_of reads it; False for a line it leaves to Python"},
    {"line_type", line_type_set, METH_O, "line_type(Line): the class line() makes"},
    {"line", (PyCFunction)(void (*)(void))make_line, METH_FASTCALL,
     "line(source, lineno, text, rank, seq, ts) -> Line: model.new_line at native cost"},
    {"phase", phase, METH_O,
     "phase(text) -> int | None: the index in PHASE_NAMES of the phase the line marks, "
     "as tables.PHASES_ANY searches it"},
    {"plain", plain, METH_O,
     "plain(data) -> (text, rank, ts, label, label_first) | None: a printable ASCII line "
     "cleaned and peeled as normalize_plain does it; None for any other line"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "triage._native", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__native(void) {
    char_flags_init();
    leads_init();
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddStringConstant(m, "SOURCE_HASH", TRIAGE_NATIVE_HASH) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *leads = PyTuple_New(128);
    if (leads == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    for (int i = 0; i < 128; i++) {
        PyObject *v = PyLong_FromUnsignedLong(LEADS[i]);
        if (v == NULL) {
            Py_DECREF(leads);
            Py_DECREF(m);
            return NULL;
        }
        PyTuple_SET_ITEM(leads, i, v);
    }
    if (PyModule_AddObject(m, "PREFIX_LEADS", leads) < 0) {
        Py_DECREF(leads);
        Py_DECREF(m);
        return NULL;
    }
    if (add_strings(m, "PREFIX_ROWS", ROW_NAMES, NROWS) < 0 ||
        add_strings(m, "PREFIX_PATTERNS", PREFIX_PATTERNS, COUNT(PREFIX_PATTERNS)) < 0 ||
        add_strings(m, "PHASE_NAMES", PHASE_NAMES, COUNT(PHASE_NAMES)) < 0 ||
        add_strings(m, "PHASE_PATTERNS", PHASE_PATTERNS, COUNT(PHASE_PATTERNS)) < 0 ||
        add_strings(m, "BAR_PATTERNS", BAR_PATTERNS, COUNT(BAR_PATTERNS)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

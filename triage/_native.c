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

static PyMethodDef methods[] = {
    {"metrics", metrics, METH_O,
     "metrics(text) -> (step, loss, grad_norm, tok_s) | None: an ASCII line's values as the "
     "progress reader's regexes read them; None for any other line"},
    {"extremes", extremes, METH_VARARGS,
     "extremes(data, block) -> [(start, end)]: the lines of each block's lowest and highest "
     "loss, grad norm and tokens/s, and its first non-finite loss"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "triage._native", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddStringConstant(m, "SOURCE_HASH", TRIAGE_NATIVE_HASH) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

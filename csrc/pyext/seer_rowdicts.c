/* seer._rowdicts: the per-agent Python objects of a PettingZoo step, to and
 * from rows, in one C loop instead of one interpreted iteration per agent.
 *
 * A step of 4,096 agents turns a dict of 4,096 action arrays into one array
 * and answers with dicts of 4,096 entries.  numpy's np.array(list of rows)
 * discovers the shape and dtype of every element (about 0.3 us each), and a
 * dict comprehension costs an interpreted iteration per entry; both run on
 * the stepping thread while the worker pool waits.  These loops read an
 * ndarray's data, shape and strides through numpy's C API (its headers
 * keep to the stable ABI), and any other value through the buffer protocol
 * (in the stable ABI since 3.11), so the module is built against the stable
 * ABI like the cffi modules.  The buffer protocol alone cost about 70 ns per
 * fresh row view: numpy builds (and at the view's end frees) a buffer
 * description with a format string for each one.
 *
 * Nothing here second-guesses a value: what a loop cannot read exactly
 * (another format, shape or byte order, an object without a buffer) makes
 * it answer "not taken" and the caller takes its general path, which names
 * the agent and the value in its error.
 */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>

#include <stdint.h>
#include <string.h>

#define MAX_DIMS 8

/* Whether a struct format's byte order prefix is this host's. */
static const char *native_order(const char *fmt)
{
    if (fmt[0] == '@' || fmt[0] == '=')
        return fmt + 1;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (fmt[0] == '<')
        return fmt + 1;
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    if (fmt[0] == '>' || fmt[0] == '!')
        return fmt + 1;
#endif
    if (fmt[0] == '<' || fmt[0] == '>' || fmt[0] == '!')
        return NULL;
    return fmt;
}

/* The element types a loop reads: real or integer scalars of this host's
 * byte order, named by their struct format letter. */
enum scalar_kind { K_NONE, K_F, K_D, K_B, K_UB, K_H, K_UH, K_I, K_UI, K_L, K_UL, K_Q, K_UQ };

/* The kind of a buffer's elements, from its struct format and item size
 * (parsed once per buffer, not per element).  K_NONE when that is not a
 * real or integer scalar of this host's byte order whose size matches the C
 * type read (the size check covers the "standard size" of a prefixed
 * format). */
static enum scalar_kind scalar_kind(const char *fmt, Py_ssize_t itemsize)
{
    if (fmt == NULL || (fmt = native_order(fmt)) == NULL || fmt[0] == '\0' || fmt[1] != '\0')
        return K_NONE;
#define KIND(T, K) return itemsize == (Py_ssize_t)sizeof(T) ? (K) : K_NONE
    switch (fmt[0]) {
    case 'f': KIND(float, K_F);
    case 'd': KIND(double, K_D);
    case 'b': KIND(signed char, K_B);
    case 'B': KIND(unsigned char, K_UB);
    case 'h': KIND(short, K_H);
    case 'H': KIND(unsigned short, K_UH);
    case 'i': KIND(int, K_I);
    case 'I': KIND(unsigned int, K_UI);
    case 'l': KIND(long, K_L);
    case 'L': KIND(unsigned long, K_UL);
    case 'q': KIND(long long, K_Q);
    case 'Q': KIND(unsigned long long, K_UQ);
    default: return K_NONE;
    }
#undef KIND
}

/* The kind of an ndarray's elements, as scalar_kind would read its buffer's
 * format: K_NONE for any other type (bool, float16, long double, complex,
 * objects...) and for data of the other byte order. */
static enum scalar_kind array_kind(PyArrayObject *a)
{
    if (PyArray_ISBYTESWAPPED(a))
        return K_NONE;
    const Py_ssize_t itemsize = (Py_ssize_t)PyArray_ITEMSIZE(a);
#define KIND(T, K) return itemsize == (Py_ssize_t)sizeof(T) ? (K) : K_NONE
    switch (PyArray_TYPE(a)) {
    case NPY_FLOAT: KIND(float, K_F);
    case NPY_DOUBLE: KIND(double, K_D);
    case NPY_BYTE: KIND(signed char, K_B);
    case NPY_UBYTE: KIND(unsigned char, K_UB);
    case NPY_SHORT: KIND(short, K_H);
    case NPY_USHORT: KIND(unsigned short, K_UH);
    case NPY_INT: KIND(int, K_I);
    case NPY_UINT: KIND(unsigned int, K_UI);
    case NPY_LONG: KIND(long, K_L);
    case NPY_ULONG: KIND(unsigned long, K_UL);
    case NPY_LONGLONG: KIND(long long, K_Q);
    case NPY_ULONGLONG: KIND(unsigned long long, K_UQ);
    default: return K_NONE;
    }
#undef KIND
}

/* The element of kind k at p, as a double. */
static inline double read_at(enum scalar_kind k, const char *p)
{
#define READ(T) do { T v_; memcpy(&v_, p, sizeof v_); return (double)v_; } while (0)
    switch (k) {
    case K_F: READ(float);
    case K_D: READ(double);
    case K_B: READ(signed char);
    case K_UB: READ(unsigned char);
    case K_H: READ(short);
    case K_UH: READ(unsigned short);
    case K_I: READ(int);
    case K_UI: READ(unsigned int);
    case K_L: READ(long);
    case K_UL: READ(unsigned long);
    case K_Q: READ(long long);
    case K_UQ: READ(unsigned long long);
    default: return 0.0;
    }
#undef READ
}

/* Whether a buffer's elements lie one after the other in C order. */
static int c_contiguous(const Py_buffer *v)
{
    if (v->strides == NULL)
        return 1;
    Py_ssize_t step = v->itemsize;
    for (int d = v->ndim - 1; d >= 0; d--) {
        if (v->shape[d] > 1 && v->strides[d] != step)
            return 0;
        step *= v->shape[d];
    }
    return 1;
}

/* Copy count elements of kind k from one value to out[0 .. count).  The
 * common value (a row of a policy's output) is contiguous and float32 or
 * float64: those loops have no branch per element. */
static void copy_value(const Py_buffer *v, enum scalar_kind k, Py_ssize_t count, double *out)
{
    if (c_contiguous(v)) {
        const char *p = (const char *)v->buf;
        if (k == K_F) {
            for (Py_ssize_t i = 0; i < count; i++) {
                float x;
                memcpy(&x, p + i * (Py_ssize_t)sizeof x, sizeof x);
                out[i] = x;
            }
        } else if (k == K_D) {
            memcpy(out, p, (size_t)count * sizeof(double));
        } else {
            for (Py_ssize_t i = 0; i < count; i++)
                out[i] = read_at(k, p + i * v->itemsize);
        }
        return;
    }
    Py_ssize_t idx[MAX_DIMS] = {0};
    for (Py_ssize_t i = 0; i < count; i++) {
        const char *p = (const char *)v->buf;
        for (int d = 0; d < v->ndim; d++)
            p += idx[d] * v->strides[d];
        out[i] = read_at(k, p);
        for (int d = v->ndim - 1; d >= 0; d--) {  /* the next index, last axis fastest */
            if (++idx[d] < v->shape[d])
                break;
            idx[d] = 0;
        }
    }
}

/* 1 for a float format, 0 otherwise. */
static int is_real_format(const char *fmt)
{
    fmt = native_order(fmt);
    return fmt != NULL && (fmt[0] == 'f' || fmt[0] == 'd') && fmt[1] == '\0';
}

/* A float64 buffer of exactly count elements (the bounds), or an error. */
static int get_doubles(PyObject *obj, Py_ssize_t count, Py_buffer *out, const char *what)
{
    if (PyObject_GetBuffer(obj, out, PyBUF_CONTIG_RO | PyBUF_FORMAT) != 0)
        return -1;
    if (scalar_kind(out->format, out->itemsize) != K_D || out->len != count * (Py_ssize_t)sizeof(double)) {
        PyBuffer_Release(out);
        PyErr_Format(PyExc_ValueError, "gather_rows: %s must be a contiguous float64 buffer of %zd elements", what,
                     count);
        return -1;
    }
    return 0;
}

/* Copy one value (a buffer of the given shape) into dst, adding to *kinds
 * what it held (1 real, 2 integer); 0 when it is not such a buffer. */
static int read_row(PyObject *item, Py_ssize_t ndim, const Py_ssize_t *shape, Py_ssize_t per_row, double *dst,
                    long *kinds)
{
    int taken;
    if (PyArray_CheckExact(item)) {
        /* an ndarray (not a subclass, whose buffer may say otherwise): its
         * fields, described as its buffer would be */
        PyArrayObject *a = (PyArrayObject *)item;
        const enum scalar_kind k = PyArray_NDIM(a) == ndim ? array_kind(a) : K_NONE;
        taken = k != K_NONE;
        for (Py_ssize_t d = 0; d < ndim && taken; d++)
            taken = PyArray_DIMS(a)[d] == shape[d];
        if (taken) {
            Py_buffer v = {.buf = PyArray_DATA(a), .itemsize = (Py_ssize_t)PyArray_ITEMSIZE(a),
                           .ndim = (int)ndim, .shape = PyArray_DIMS(a), .strides = PyArray_STRIDES(a)};
            copy_value(&v, k, per_row, dst);
            *kinds |= (k == K_F || k == K_D) ? 1 : 2;
        }
        return taken;
    }
    /* numpy reads any buffer as an array except bytes, a string scalar to it */
    if (!PyObject_CheckBuffer(item) || PyBytes_Check(item))
        return 0;
    Py_buffer v;
    if (PyObject_GetBuffer(item, &v, PyBUF_RECORDS_RO) != 0) {
        PyErr_Clear();
        return 0;
    }
    const enum scalar_kind k = v.ndim == ndim ? scalar_kind(v.format, v.itemsize) : K_NONE;
    taken = k != K_NONE;
    for (Py_ssize_t d = 0; d < ndim && taken; d++)
        taken = v.shape[d] == shape[d];
    if (taken) {
        copy_value(&v, k, per_row, dst);
        *kinds |= (k == K_F || k == K_D) ? 1 : 2;
    }
    PyBuffer_Release(&v);
    return taken;
}

/* The value of name in the dict values, borrowed, or NULL (no error set)
 * when it has none.  *pos walks the dict alongside while its keys come in
 * the names' order (the usual policy output: a dict built over the agents),
 * which costs no lookup; the first key out of order ends the walk.  Keys
 * are compared only as exact strings, which runs no Python code (a key's
 * own __eq__ could change the dict under the walk). */
static PyObject *named_value(PyObject *values, PyObject *name, Py_ssize_t *pos)
{
    if (*pos >= 0) {
        PyObject *key, *value;
        if (PyDict_Next(values, pos, &key, &value)) {
            if (key == name)
                return value;
            if (PyUnicode_CheckExact(key) && PyUnicode_CheckExact(name)) {
                const int order = PyUnicode_Compare(key, name);
                if (order == 0)
                    return value;
                if (PyErr_Occurred())
                    PyErr_Clear();
            }
        }
        *pos = -1;
    }
    PyObject *value = PyDict_GetItemWithError(values, name);
    if (value == NULL)
        PyErr_Clear();  /* an unhashable name: not taken, as a missing one */
    return value;
}

/* gather_rows(values, out, shape[, low, high, finite[, names]]) -> kinds
 *
 * Copies values[i] (each a buffer of the given shape) into row i of out, a
 * writable C-contiguous float64 buffer of len(values) * prod(shape)
 * elements; with names (a list), values is a dict and row i takes
 * values[names[i]].  Returns a bit set of what the values held: 1 some real
 * element type, 2 some integer one, and with bounds (low and high: float64
 * buffers of prod(shape) elements, a row's bounds; None for none) 4 when
 * every element x has low <= x <= high (so not NaN) and, with finite, is
 * finite too.  None when some value is not a buffer of that exact shape and
 * a native real or integer format (bool, complex, objects and byte-swapped
 * data included) or some name has no value, with out partly written. */
static PyObject *gather_rows(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *values, *out_obj, *shape_obj, *low_obj = Py_None, *high_obj = Py_None, *names = Py_None;
    int finite = 0;
    if (!PyArg_ParseTuple(args, "OOO|OOpO", &values, &out_obj, &shape_obj, &low_obj, &high_obj, &finite, &names))
        return NULL;
    const int named = names != Py_None;
    if (!(named ? PyDict_Check(values) && PyList_Check(names) : PyList_Check(values)) || !PyTuple_Check(shape_obj)) {
        PyErr_SetString(PyExc_TypeError, "gather_rows(list, buffer, tuple[, low, high, finite]) or "
                                         "gather_rows(dict, buffer, tuple, low, high, finite, names: list)");
        return NULL;
    }
    Py_ssize_t ndim = PyTuple_Size(shape_obj);
    if (ndim > MAX_DIMS) {
        Py_RETURN_NONE;
    }
    Py_ssize_t shape[MAX_DIMS], per_row = 1;
    for (Py_ssize_t d = 0; d < ndim; d++) {
        shape[d] = PyLong_AsSsize_t(PyTuple_GetItem(shape_obj, d));
        if (shape[d] < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a negative dimension");
            return NULL;
        }
        per_row *= shape[d];
    }
    const int bounded = low_obj != Py_None;
    Py_buffer low = {0}, high = {0};
    if (bounded) {
        if (get_doubles(low_obj, per_row, &low, "low") != 0)
            return NULL;
        if (get_doubles(high_obj, per_row, &high, "high") != 0) {
            PyBuffer_Release(&low);
            return NULL;
        }
    }
    Py_buffer out;
    Py_ssize_t n = PyList_Size(named ? names : values);
    if (PyObject_GetBuffer(out_obj, &out, PyBUF_CONTIG | PyBUF_FORMAT) != 0) {
        out.obj = NULL;
    } else if (scalar_kind(out.format, out.itemsize) != K_D || out.len != (Py_ssize_t)(n * per_row * sizeof(double))) {
        PyBuffer_Release(&out);
        out.obj = NULL;
        PyErr_SetString(PyExc_ValueError, "gather_rows: out must be float64 with len(values) * prod(shape) elements");
    }
    if (out.obj == NULL) {
        if (bounded) {
            PyBuffer_Release(&low);
            PyBuffer_Release(&high);
        }
        return NULL;
    }
    double *dst = (double *)out.buf;
    long kinds = 0;
    int taken = 1;
    /* the walk alongside the names only where the dict holds as many keys */
    Py_ssize_t pos = named && PyDict_Size(values) == n ? 0 : -1;
    for (Py_ssize_t i = 0; i < n && taken; i++) {
        /* borrowed: the caller's list or dict holds it (a lookup of a name may run a colliding key's __eq__;
         * the row is read before the next one is looked up) */
        PyObject *item = named ? named_value(values, PyList_GetItem(names, i), &pos) : PyList_GetItem(values, i);
        taken = item != NULL && read_row(item, ndim, shape, per_row, dst + i * per_row, &kinds);
    }
    PyBuffer_Release(&out);
    if (taken && bounded) {
        /* one pass over the gathered rows, no branch per element: NaN fails
         * both comparisons, an infinity the finite check */
        const double *lo = low.buf, *hi = high.buf;
        int inside = 1;
        for (Py_ssize_t i = 0; i < n; i++) {
            const double *row = dst + i * per_row;
            for (Py_ssize_t j = 0; j < per_row; j++)
                inside &= (row[j] >= lo[j]) & (row[j] <= hi[j]) & (!finite | (row[j] - row[j] == 0.0));
        }
        if (inside)
            kinds |= 4;
    }
    if (bounded) {
        PyBuffer_Release(&low);
        PyBuffer_Release(&high);
    }
    if (!taken)
        Py_RETURN_NONE;
    return PyLong_FromLong(kinds);
}

/* A copy of template (a dict of the agents' names in row order) whose value
 * for the key at position i is value(i, ctx).  Copying the template and
 * replacing its values never resizes the table, as building a dict of
 * thousands of entries one insertion at a time does.  The template has
 * exactly n keys (the caller checks). */
static PyObject *fill_copy(PyObject *template, Py_ssize_t n, PyObject *(*value)(Py_ssize_t, void *), void *ctx)
{
    PyObject *dict = PyDict_Copy(template);
    if (dict == NULL)
        return NULL;
    /* PyDict_Next over the copy walks its keys in insertion order; replacing
     * the value of a key already there does not change the table, so the
     * walk stays valid (the C API allows it). */
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *old;
    while (i < n && PyDict_Next(dict, &pos, &key, &old)) {
        PyObject *v = value(i++, ctx);
        if (v == NULL || PyDict_SetItem(dict, key, v) != 0) {
            Py_XDECREF(v);
            Py_DECREF(dict);
            return NULL;
        }
        Py_DECREF(v);
    }
    return dict;
}

static int check_template(PyObject *template, Py_ssize_t n, const char *fn)
{
    if (!PyDict_Check(template)) {
        PyErr_Format(PyExc_TypeError, "%s: the template must be a dict", fn);
        return -1;
    }
    if (PyDict_Size(template) != n) {
        PyErr_Format(PyExc_ValueError, "%s: the template has %zd keys for %zd values", fn,
                     PyDict_Size(template), n);
        return -1;
    }
    return 0;
}

typedef struct float_source {
    const Py_buffer *v;
    enum scalar_kind kind;
} float_source;

static PyObject *float_at(Py_ssize_t i, void *ctx)
{
    const float_source *f = ctx;
    return PyFloat_FromDouble(read_at(f->kind, (const char *)f->v->buf + i * f->v->strides[0]));
}

/* A 1-D buffer of native float32 or float64 elements into *v (released by
 * the caller), or -1 with an error naming fn. */
static int get_real_vector(PyObject *values, Py_buffer *v, const char *fn)
{
    if (PyObject_GetBuffer(values, v, PyBUF_RECORDS_RO) != 0)
        return -1;
    if (v->ndim != 1 || v->format == NULL || !is_real_format(v->format)) {
        PyBuffer_Release(v);
        PyErr_Format(PyExc_ValueError, "%s: values must be a 1-D float32 or float64 buffer", fn);
        return -1;
    }
    return 0;
}

/* float_dict(template, values) -> {key_i: float(values[i])}
 * template: a dict of the keys in row order; values: a 1-D buffer of as many
 * native float32 or float64 elements. */
static PyObject *float_dict(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *template, *values;
    if (!PyArg_ParseTuple(args, "OO", &template, &values))
        return NULL;
    Py_buffer v;
    if (get_real_vector(values, &v, "float_dict") != 0)
        return NULL;
    PyObject *dict = check_template(template, v.shape[0], "float_dict") == 0
        ? fill_copy(template, v.shape[0], float_at, &(float_source){&v, scalar_kind(v.format, v.itemsize)}) : NULL;
    PyBuffer_Release(&v);
    return dict;
}

/* Where a float keeps its value: right after the object header, in every
 * CPython this module builds for (PyFloatObject is outside the limited API).
 * Checked at import against floats made there; where the check fails,
 * refill_floats never writes and always answers False. */
static Py_ssize_t float_value_at = 0;

static int float_layout_known(void)
{
    const double probes[2] = {0x1.23456789abcdp+3, -0x1.fedcba987654p-9};
    for (int k = 0; k < 2; k++) {
        PyObject *f = PyFloat_FromDouble(probes[k]);
        if (f == NULL)
            return -1;
        double seen;
        memcpy(&seen, (const char *)f + sizeof(PyObject), sizeof seen);
        Py_DECREF(f);
        if (seen != probes[k])
            return 0;
    }
    return 1;
}

/* refill_floats(holder, values) -> whether holder's values now read
 * values[i] (in key order).  Only a dict of exact floats that holder alone
 * refers to is written: nothing else can see a float that no one else
 * holds, so giving it another value is, to every observer, a new float
 * without the allocation, its free and the dict's lookups per key (most of
 * a 4,096-agent reward dict's cost).  Answers False at the first value
 * held elsewhere (or not a float); the values written before it are seen
 * by holder alone, which the caller then drops. */
static PyObject *refill_floats(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *holder, *values;
    if (!PyArg_ParseTuple(args, "OO", &holder, &values))
        return NULL;
    if (!PyDict_Check(holder)) {
        PyErr_SetString(PyExc_TypeError, "refill_floats: holder must be a dict");
        return NULL;
    }
    Py_buffer v;
    if (get_real_vector(values, &v, "refill_floats") != 0)
        return NULL;
    if (PyDict_Size(holder) != v.shape[0]) {
        PyErr_Format(PyExc_ValueError, "refill_floats: the holder has %zd keys for %zd values", PyDict_Size(holder),
                     v.shape[0]);
        PyBuffer_Release(&v);
        return NULL;
    }
    const enum scalar_kind kind = scalar_kind(v.format, v.itemsize);
    int done = float_value_at > 0;
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *value;
    while (done && PyDict_Next(holder, &pos, &key, &value)) {
        if (!PyFloat_CheckExact(value) || Py_REFCNT(value) != 1) {
            done = 0;
            break;
        }
        const double x = read_at(kind, (const char *)v.buf + i++ * v.strides[0]);
        memcpy((char *)value + float_value_at, &x, sizeof x);
    }
    PyBuffer_Release(&v);
    return PyBool_FromLong(done);
}

static PyObject *new_empty_dict(Py_ssize_t Py_UNUSED(i), void *Py_UNUSED(ctx))
{
    return PyDict_New();
}

/* empty_dicts(template) -> {key: {} for key in template}, each {} its own. */
static PyObject *empty_dicts(PyObject *Py_UNUSED(self), PyObject *template)
{
    if (!PyDict_Check(template)) {
        PyErr_SetString(PyExc_TypeError, "empty_dicts: the template must be a dict");
        return NULL;
    }
    return fill_copy(template, PyDict_Size(template), new_empty_dict, NULL);
}

/* unheld(holder, empty) -> whether every value of the dict holder is
 * referred to by holder alone (and, with empty, is an empty dict): then no
 * one else can see it, and it may be reused without anyone noticing.  The
 * values are read borrowed, so the counts are exact. */
static PyObject *unheld(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *holder;
    int empty;
    if (!PyArg_ParseTuple(args, "Op", &holder, &empty))
        return NULL;
    if (!PyDict_Check(holder)) {
        PyErr_SetString(PyExc_TypeError, "unheld: holder must be a dict");
        return NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(holder, &pos, &key, &value)) {
        if (Py_REFCNT(value) != 1)
            Py_RETURN_FALSE;
        if (empty && (!PyDict_Check(value) || PyDict_Size(value) != 0))
            Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"gather_rows", gather_rows, METH_VARARGS,
     "gather_rows(values, out, shape[, low, high, finite[, names]]): copy each value (a buffer of that shape; "
     "with names, values is a dict read at them) into a row of out (float64); 1|2 for real|integer values seen "
     "(|4 all within the bounds), None if some value is not such a buffer or some name has none."},
    {"float_dict", float_dict, METH_VARARGS,
     "float_dict(template, values): a copy of template (keys in row order) with key i set to float(values[i])."},
    {"unheld", unheld, METH_VARARGS,
     "unheld(holder, empty): whether holder (a dict) alone refers to each of its values (each an empty dict "
     "with empty)."},
    {"refill_floats", refill_floats, METH_VARARGS,
     "refill_floats(holder, values): set holder's values (floats only holder refers to) to values in key order; "
     "whether it did (False: some value is held elsewhere or not a float)."},
    {"empty_dicts", empty_dicts, METH_O, "empty_dicts(template): {key: {} for key in template}, each {} its own."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rowdicts",
    "The per-agent objects of a PettingZoo step to and from rows, in C loops.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__rowdicts(void)
{
    import_array(); /* numpy's C API table: returns NULL with numpy's ImportError set when it cannot */
    const int known = float_layout_known();
    if (known < 0)
        return NULL;
    float_value_at = known ? (Py_ssize_t)sizeof(PyObject) : 0;
    return PyModule_Create(&module);
}

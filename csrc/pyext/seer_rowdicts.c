/* seer._rowdicts: the per-agent Python objects of a PettingZoo step, to and
 * from rows, in one C loop instead of one interpreted iteration per agent.
 *
 * A step of 4,096 agents turns a dict of 4,096 action arrays into one array
 * and answers with dicts of 4,096 entries.  numpy's np.array(list of rows)
 * discovers the shape and dtype of every element (about 0.3 us each), and a
 * dict comprehension costs an interpreted iteration per entry; both run on
 * the stepping thread while the worker pool waits.  These loops read each
 * value through the buffer protocol, so they need no numpy headers, and are
 * built against the stable ABI (3.11 added the buffer protocol to it) like
 * the cffi modules.
 *
 * Nothing here second-guesses a value: what a loop cannot read exactly
 * (another format, shape or byte order, an object without a buffer) makes
 * it answer "not taken" and the caller takes its general path, which names
 * the agent and the value in its error.
 */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

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

/* The value of one element of a buffer with struct format fmt and item
 * size itemsize, as a double.  Returns 0 when that is not a real or integer
 * scalar of this host's byte order whose size matches the C type read (the
 * size check covers the "standard size" of a prefixed format). */
static int read_scalar(const char *fmt, Py_ssize_t itemsize, const char *p, double *out)
{
    if (fmt == NULL || (fmt = native_order(fmt)) == NULL || fmt[0] == '\0' || fmt[1] != '\0')
        return 0;
#define READ(T) do { T v_; if (itemsize != (Py_ssize_t)sizeof(T)) return 0; memcpy(&v_, p, sizeof v_); \
                     *out = (double)v_; return 1; } while (0)
    switch (fmt[0]) {
    case 'f': READ(float);
    case 'd': READ(double);
    case 'b': READ(signed char);
    case 'B': READ(unsigned char);
    case 'h': READ(short);
    case 'H': READ(unsigned short);
    case 'i': READ(int);
    case 'I': READ(unsigned int);
    case 'l': READ(long);
    case 'L': READ(unsigned long);
    case 'q': READ(long long);
    case 'Q': READ(unsigned long long);
    default: return 0;
    }
#undef READ
}

/* 1 for a float format, 0 otherwise. */
static int is_real_format(const char *fmt)
{
    fmt = native_order(fmt);
    return fmt != NULL && (fmt[0] == 'f' || fmt[0] == 'd') && fmt[1] == '\0';
}

/* Copy one value's elements (C order, any strides) to out[0 .. count). */
static int copy_value(const Py_buffer *v, double *out)
{
    Py_ssize_t idx[MAX_DIMS] = {0};
    Py_ssize_t count = 1;
    for (int d = 0; d < v->ndim; d++)
        count *= v->shape[d];
    for (Py_ssize_t k = 0; k < count; k++) {
        const char *p = (const char *)v->buf;
        for (int d = 0; d < v->ndim; d++)
            p += idx[d] * v->strides[d];
        if (!read_scalar(v->format, v->itemsize, p, &out[k]))
            return 0;
        for (int d = v->ndim - 1; d >= 0; d--) {  /* the next index, last axis fastest */
            if (++idx[d] < v->shape[d])
                break;
            idx[d] = 0;
        }
    }
    return 1;
}

/* gather_rows(values, out, shape) -> kinds
 *
 * Copies values[i] (each a buffer of the given shape) into row i of out, a
 * writable C-contiguous float64 buffer of len(values) * prod(shape)
 * elements.  Returns a bit set of what the values held: 1 some real
 * element type, 2 some integer one; None when some value is not a buffer
 * of that exact shape and a native real or integer format (bool, complex,
 * objects and byte-swapped data included), with out partly written. */
static PyObject *gather_rows(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *values, *out_obj, *shape_obj;
    if (!PyArg_ParseTuple(args, "OOO", &values, &out_obj, &shape_obj))
        return NULL;
    if (!PyList_Check(values) || !PyTuple_Check(shape_obj)) {
        PyErr_SetString(PyExc_TypeError, "gather_rows(list, buffer, tuple)");
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
    Py_buffer out;
    if (PyObject_GetBuffer(out_obj, &out, PyBUF_CONTIG | PyBUF_FORMAT) != 0)
        return NULL;
    Py_ssize_t n = PyList_Size(values);
    if (out.format == NULL || strcmp(out.format, "d") != 0 || out.len != (Py_ssize_t)(n * per_row * sizeof(double))) {
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "gather_rows: out must be float64 with len(values) * prod(shape) elements");
        return NULL;
    }
    double *dst = (double *)out.buf;
    long kinds = 0;
    int taken = 1;
    for (Py_ssize_t i = 0; i < n && taken; i++) {
        PyObject *item = PyList_GetItem(values, i);  /* borrowed: the caller's list holds it */
        /* numpy reads any buffer as an array except bytes, a string scalar to it */
        if (!PyObject_CheckBuffer(item) || PyBytes_Check(item)) {
            taken = 0;
            break;
        }
        Py_buffer v;
        if (PyObject_GetBuffer(item, &v, PyBUF_RECORDS_RO) != 0) {
            PyErr_Clear();
            taken = 0;
            break;
        }
        if (v.ndim != ndim || v.format == NULL) {
            taken = 0;
        } else {
            for (Py_ssize_t d = 0; d < ndim; d++)
                if (v.shape[d] != shape[d])
                    taken = 0;
        }
        if (taken)
            taken = copy_value(&v, dst + i * per_row);
        if (taken)
            kinds |= is_real_format(v.format) ? 1 : 2;
        PyBuffer_Release(&v);
    }
    PyBuffer_Release(&out);
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

static PyObject *float_at(Py_ssize_t i, void *ctx)
{
    const Py_buffer *v = ctx;
    double x = 0.0;
    read_scalar(v->format, v->itemsize, (const char *)v->buf + i * v->strides[0], &x);
    return PyFloat_FromDouble(x);
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
    if (PyObject_GetBuffer(values, &v, PyBUF_RECORDS_RO) != 0)
        return NULL;
    if (v.ndim != 1 || v.format == NULL || !is_real_format(v.format)) {
        PyBuffer_Release(&v);
        PyErr_SetString(PyExc_ValueError, "float_dict: values must be a 1-D float32 or float64 buffer");
        return NULL;
    }
    PyObject *dict = check_template(template, v.shape[0], "float_dict") == 0
        ? fill_copy(template, v.shape[0], float_at, &v) : NULL;
    PyBuffer_Release(&v);
    return dict;
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
     "gather_rows(values, out, shape): copy each value (a buffer of that shape) into a row of out (float64); "
     "1|2 for real|integer values seen, None if some value is not such a buffer."},
    {"float_dict", float_dict, METH_VARARGS,
     "float_dict(template, values): a copy of template (keys in row order) with key i set to float(values[i])."},
    {"unheld", unheld, METH_VARARGS,
     "unheld(holder, empty): whether holder (a dict) alone refers to each of its values (each an empty dict "
     "with empty)."},
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
    return PyModule_Create(&module);
}

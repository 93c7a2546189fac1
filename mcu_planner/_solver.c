/*
 * CPython binding of the exact placement search (_solver_core.c): converts
 * Python sequences to arrays, runs the search with the GIL released and
 * returns its result as Python objects.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>

#include "_solver_core.h"

/* Reads three equally long int sequences; validates what the search relies on. */
static int read_intervals(PyObject *sizes_obj, PyObject *starts_obj, PyObject *ends_obj, int *n_out, int64_t **size,
                          int64_t **start, int64_t **end)
{
    PyObject *seqs[3] = {NULL, NULL, NULL};
    PyObject *objs[3] = {sizes_obj, starts_obj, ends_obj};
    int64_t **outs[3] = {size, start, end};
    Py_ssize_t n = -1;
    int ok = 0;
    *size = *start = *end = NULL;
    for (int k = 0; k < 3; ++k) {
        seqs[k] = PySequence_Fast(objs[k], "sizes, starts and ends must be sequences of ints");
        if (!seqs[k]) goto done;
        Py_ssize_t len = PySequence_Fast_GET_SIZE(seqs[k]);
        if (n >= 0 && len != n) {
            PyErr_SetString(PyExc_ValueError, "sizes, starts and ends must have the same length");
            goto done;
        }
        n = len;
    }
    if (n > INT32_MAX / 4) {
        PyErr_SetString(PyExc_ValueError, "too many buffers");
        goto done;
    }
    for (int k = 0; k < 3; ++k) {
        *outs[k] = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
        if (!*outs[k]) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < n; ++i) {
            long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seqs[k], i));
            if (v == -1 && PyErr_Occurred()) goto done;
            (*outs[k])[i] = v;
        }
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        if ((*size)[i] <= 0 || (*start)[i] >= (*end)[i] || (*size)[i] > ((int64_t)1 << 48)) {
            PyErr_Format(PyExc_ValueError, "buffer %zd needs 0 < size <= 2**48 and start < end", i);
            goto done;
        }
    }
    *n_out = (int)n;
    ok = 1;
done:
    for (int k = 0; k < 3; ++k) Py_XDECREF(seqs[k]);
    if (!ok) {
        free(*size);
        free(*start);
        free(*end);
        *size = *start = *end = NULL;
    }
    return ok;
}

/* Reads (lower, upper, height) triples over n buffers: distinct indices in
 * range, alive at a common time, 1 <= height <= the lower one's size, no pair
 * given twice.  Sets *pairs to NULL when there are none. */
static int read_pairs(PyObject *pairs_obj, int n, const int64_t *size, const int64_t *start, const int64_t *end,
                      int *num_out, int64_t **pairs)
{
    *pairs = NULL;
    *num_out = 0;
    if (pairs_obj == NULL || pairs_obj == Py_None) return 1;
    PyObject *seq = PySequence_Fast(pairs_obj, "pairs must be a sequence of (lower, upper, height)");
    if (!seq) return 0;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    int ok = 0;
    if (count > (Py_ssize_t)n * (Py_ssize_t)n || count > INT32_MAX / 4) {
        PyErr_SetString(PyExc_ValueError, "more pairs than pairs of buffers");
        goto done;
    }
    *pairs = malloc((size_t)(3 * count + 1) * sizeof **pairs);
    if (!*pairs) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; ++i) {
        PyObject *triple = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, i), "a pair is (lower, upper, height)");
        if (!triple) goto done;
        if (PySequence_Fast_GET_SIZE(triple) != 3) {
            Py_DECREF(triple);
            PyErr_SetString(PyExc_ValueError, "a pair is (lower, upper, height)");
            goto done;
        }
        for (int k = 0; k < 3; ++k) {
            long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(triple, k));
            if (v == -1 && PyErr_Occurred()) {
                Py_DECREF(triple);
                goto done;
            }
            (*pairs)[3 * i + k] = v;
        }
        Py_DECREF(triple);
        int64_t lower = (*pairs)[3 * i], upper = (*pairs)[3 * i + 1], height = (*pairs)[3 * i + 2];
        if (lower < 0 || lower >= n || upper < 0 || upper >= n || lower == upper || height < 1 ||
            height > size[lower] || !(start[lower] < end[upper] && start[upper] < end[lower])) {
            PyErr_Format(PyExc_ValueError,
                         "pair %zd needs two buffers alive together and 1 <= height <= the lower one's size", i);
            goto done;
        }
        for (Py_ssize_t k = 0; k < i; ++k) {
            int64_t a = (*pairs)[3 * k], b = (*pairs)[3 * k + 1];
            if ((a == lower && b == upper) || (a == upper && b == lower)) {
                PyErr_Format(PyExc_ValueError, "pair %zd repeats two buffers", i);
                goto done;
            }
        }
    }
    *num_out = (int)count;
    ok = 1;
done:
    Py_DECREF(seq);
    if (!ok) {
        free(*pairs);
        *pairs = NULL;
    }
    return ok;
}

static PyObject *offsets_to_list(const int64_t *offset, int n)
{
    PyObject *list = PyList_New(n);
    if (!list) return NULL;
    for (int i = 0; i < n; ++i) {
        PyObject *v = PyLong_FromLongLong(offset[i]);
        if (!v) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, v);
    }
    return list;
}

PyDoc_STRVAR(fit_doc,
             "fit(sizes, starts, ends, capacity, seconds, preorders='WAT,TAW,TWA', pairs=None, max_nodes=0)\n"
             "    -> (status, offsets, nodes)\n\n"
             "Looks for offsets placing every buffer (size > 0, lifetime [start, end)) below\n"
             "`capacity` with no two buffers alive at once sharing a unit, except that for\n"
             "each (lower, upper, height) in `pairs`, `upper` may start `height` units above\n"
             "`lower` (instead of its size) when `lower` sits below it.  status is\n"
             "'found' (offsets is a list), 'infeasible' (search exhausted: no placement\n"
             "exists), 'timeout' (offsets is None) or, after `max_nodes` search nodes when\n"
             "it is positive, 'out of work' (offsets is None; the same on every machine).");

static PyObject *py_fit(PyObject *self, PyObject *args)
{
    PyObject *sizes_obj, *starts_obj, *ends_obj;
    long long capacity;
    double seconds;
    const char *preorders = "WAT,TAW,TWA";
    PyObject *pairs_obj = NULL;
    long long max_nodes = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOLd|sOL", &sizes_obj, &starts_obj, &ends_obj, &capacity, &seconds, &preorders,
                          &pairs_obj, &max_nodes))
        return NULL;
    if (!solver_preorders_valid(preorders)) {
        PyErr_SetString(PyExc_ValueError, "preorders: up to 8 comma-separated keys of up to 4 letters from WATZCOLUR");
        return NULL;
    }
    int n;
    int64_t *size, *start, *end;
    if (!read_intervals(sizes_obj, starts_obj, ends_obj, &n, &size, &start, &end)) return NULL;
    int num_pairs;
    int64_t *pairs;
    if (!read_pairs(pairs_obj, n, size, start, end, &num_pairs, &pairs)) {
        free(size);
        free(start);
        free(end);
        return NULL;
    }
    int64_t *offset = malloc((size_t)(n ? n : 1) * sizeof *offset);
    int64_t nodes = 0;
    int status = OUT_OF_MEMORY;
    if (offset) {
        Py_BEGIN_ALLOW_THREADS
        status = solver_fit(n, size, start, end, num_pairs, pairs, (int64_t)capacity, seconds, (int64_t)max_nodes,
                            preorders, offset, &nodes);
        Py_END_ALLOW_THREADS
    }
    PyObject *result = NULL;
    if (status == OUT_OF_MEMORY) {
        PyErr_NoMemory();
    } else if (status == FOUND) {
        PyObject *offsets = offsets_to_list(offset, n);
        if (offsets) result = Py_BuildValue("(sNL)", "found", offsets, (long long)nodes);
    } else {
        const char *answer = status == NOT_FOUND ? "infeasible" : status == OUT_OF_WORK ? "out of work" : "timeout";
        result = Py_BuildValue("(sOL)", answer, Py_None, (long long)nodes);
    }
    free(offset);
    free(pairs);
    free(size);
    free(start);
    free(end);
    return result;
}

PyDoc_STRVAR(first_fit_doc,
             "first_fit(sizes, starts, ends) -> offsets\n\n"
             "Largest-first first-fit placement (a quick upper bound).");

static PyObject *py_first_fit(PyObject *self, PyObject *args)
{
    PyObject *sizes_obj, *starts_obj, *ends_obj;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOO", &sizes_obj, &starts_obj, &ends_obj)) return NULL;
    int n;
    int64_t *size, *start, *end;
    if (!read_intervals(sizes_obj, starts_obj, ends_obj, &n, &size, &start, &end)) return NULL;
    int64_t *offset = malloc((size_t)(n ? n : 1) * sizeof *offset);
    PyObject *result = NULL;
    if (!offset || !solver_first_fit(n, size, start, end, offset))
        PyErr_NoMemory();
    else
        result = offsets_to_list(offset, n);
    free(offset);
    free(size);
    free(start);
    free(end);
    return result;
}

static PyMethodDef solver_methods[] = {
    {"fit", py_fit, METH_VARARGS, fit_doc},
    {"first_fit", py_first_fit, METH_VARARGS, first_fit_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef solver_module = {
    PyModuleDef_HEAD_INIT, "_solver", "Exact static buffer placement search (see mcu_planner.memory.planners.optimal).", -1,
    solver_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__solver(void)
{
    return PyModule_Create(&solver_module);
}

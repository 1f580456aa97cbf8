/* FNV-1a 64 in C: the accelerator for otelhooks._fingerprint.
 *
 * Why: FNV-1a is byte-serial, so pure Python pays a big-integer multiply per byte on the
 * agent's thread, for every tool call (benchmarks/README.md has the numbers). The definition lives in _fingerprint.py; this module is
 * optional (the build skips it where no compiler is present) and must give identical results.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static PyObject *
fnv1a_64(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)view.buf;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (Py_ssize_t i = 0; i < view.len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLongLong(h);
}

static PyMethodDef methods[] = {
    {"fnv1a_64", fnv1a_64, METH_O, "FNV-1a 64 of a bytes-like object, as an int."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fnv1a", "FNV-1a 64, compiled.", -1, methods,
};

PyMODINIT_FUNC
PyInit__fnv1a(void)
{
    return PyModule_Create(&module);
}

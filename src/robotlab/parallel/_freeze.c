/* The plain-data fast path of robotlab.parallel.boundary.freeze_deep, in C.
 *
 * freeze_plain(value, frozen_dict_type, leaf_types, not_plain) returns a deeply
 * immutable equivalent of value built from tuples, frozensets, bytes and
 * FrozenDicts, or not_plain when it meets anything it does not handle (a record
 * type, a non-builtin dict key, nesting deeper than MAX_DEPTH, a value that
 * cannot cross): the Python walker then redoes the value, with paths for its
 * error messages. boundary._freeze_plain is the same function in Python; the
 * tests check that both give the same results.
 *
 * It runs no Python code (every hash it computes is a builtin type's), keeps
 * no global state, and so loads in isolated subinterpreters with their own GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Deeper values (or cycles) are left to the Python walker, which is iterative. */
#define MAX_DEPTH 64

typedef struct {
    PyTypeObject *frozen_dict;
    PyObject *leaf_types;   /* a set of exact types whose instances are immutable leaves */
    PyObject *not_plain;
    PyObject *no_args;
} Freezer;

static PyObject *freeze(Freezer *f, PyObject *value, int depth);

/* Builtin scalars, whose hash is computed in C: the only dict keys and set items handled here. */
static inline int
is_builtin_scalar(PyObject *value)
{
    PyTypeObject *type = Py_TYPE(value);
    return type == &PyUnicode_Type || type == &PyLong_Type || type == &PyFloat_Type || value == Py_None
        || type == &PyBool_Type || type == &PyBytes_Type || type == &PyComplex_Type;
}

static PyObject *
not_plain(Freezer *f)
{
    return Py_NewRef(f->not_plain);
}

/* A tuple, or a list (snapshotted as a tuple first): the same tuple back when no item changed. */
static PyObject *
freeze_sequence(Freezer *f, PyObject *value, int depth)
{
    PyObject *items = PyList_CheckExact(value) ? PyList_AsTuple(value) : Py_NewRef(value);
    if (items == NULL) {
        return NULL;
    }
    Py_ssize_t size = PyTuple_GET_SIZE(items);
    PyObject *out = NULL;  /* made on the first changed item */
    for (Py_ssize_t i = 0; i < size; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        PyObject *frozen = freeze(f, item, depth + 1);
        if (frozen == NULL || frozen == f->not_plain) {
            Py_XDECREF(out);
            Py_DECREF(items);
            return frozen;
        }
        if (frozen != item && out == NULL) {
            out = PyTuple_New(size);
            if (out == NULL) {
                Py_DECREF(frozen);
                Py_DECREF(items);
                return NULL;
            }
            for (Py_ssize_t j = 0; j < i; j++) {
                PyTuple_SET_ITEM(out, j, Py_NewRef(PyTuple_GET_ITEM(items, j)));
            }
        }
        if (out != NULL) {
            PyTuple_SET_ITEM(out, i, frozen);
        }
        else {
            Py_DECREF(frozen);
        }
    }
    if (out == NULL) {
        return items;
    }
    Py_DECREF(items);
    return out;
}

static PyObject *
freeze_dict(Freezer *f, PyObject *value, int depth)
{
    /* dict's own constructor, not FrozenDict's: the new mapping is filled here. */
    PyObject *out = PyDict_Type.tp_new(f->frozen_dict, f->no_args, NULL);
    if (out == NULL) {
        return NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *item;
    int same = 1;  /* every value came back as itself */
    while (PyDict_Next(value, &pos, &key, &item)) {
        if (!is_builtin_scalar(key)) {
            Py_DECREF(out);
            return not_plain(f);
        }
        /* Hold both: a finalizer run by the allocator could let another thread change the dict. */
        Py_INCREF(key);
        Py_INCREF(item);
        PyObject *frozen = freeze(f, item, depth + 1);
        Py_DECREF(item);
        if (frozen == NULL || frozen == f->not_plain) {
            Py_DECREF(key);
            Py_DECREF(out);
            return frozen;
        }
        same = same && frozen == item;
        int failed = PyDict_SetItem(out, key, frozen);
        Py_DECREF(key);
        Py_DECREF(frozen);
        if (failed) {
            Py_DECREF(out);
            return NULL;
        }
    }
    if (same && Py_TYPE(value) == f->frozen_dict) {
        Py_DECREF(out);  /* an intact FrozenDict comes back as itself */
        return Py_NewRef(value);
    }
    return out;
}

/* A set or frozenset of builtin scalars; the same frozenset back. */
static PyObject *
freeze_set(Freezer *f, PyObject *value)
{
    PyObject *iterator = PyObject_GetIter(value);
    if (iterator == NULL) {
        return NULL;
    }
    PyObject *item;
    while ((item = PyIter_Next(iterator)) != NULL) {
        int scalar = is_builtin_scalar(item);
        Py_DECREF(item);
        if (!scalar) {
            Py_DECREF(iterator);
            return not_plain(f);
        }
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred()) {
        return NULL;
    }
    return PyFrozenSet_CheckExact(value) ? Py_NewRef(value) : PyFrozenSet_New(value);
}

static PyObject *
freeze(Freezer *f, PyObject *value, int depth)
{
    PyTypeObject *type = Py_TYPE(value);
    if (is_builtin_scalar(value)) {
        return Py_NewRef(value);
    }
    /* A FrozenDict is walked too: dict.__setitem__ can still put anything in one. */
    int is_dict = type == &PyDict_Type || type == f->frozen_dict;
    if (type == &PyTuple_Type || type == &PyList_Type || is_dict) {
        if (depth > MAX_DEPTH) {
            return not_plain(f);
        }
        if (Py_EnterRecursiveCall(" while freezing a value")) {
            return NULL;
        }
        PyObject *frozen = is_dict ? freeze_dict(f, value, depth) : freeze_sequence(f, value, depth);
        Py_LeaveRecursiveCall();
        return frozen;
    }
    int leaf = PySet_Contains(f->leaf_types, (PyObject *)type);
    if (leaf < 0) {
        return NULL;
    }
    if (leaf) {
        return Py_NewRef(value);
    }
    if (type == &PySet_Type || type == &PyFrozenSet_Type) {
        return freeze_set(f, value);
    }
    if (type == &PyByteArray_Type) {
        return PyBytes_FromStringAndSize(PyByteArray_AS_STRING(value), PyByteArray_GET_SIZE(value));
    }
    return not_plain(f);
}

static PyObject *
freeze_plain(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "freeze_plain() takes 4 arguments (%zd given)", nargs);
        return NULL;
    }
    if (!PyType_Check(args[1]) || !PyType_IsSubtype((PyTypeObject *)args[1], &PyDict_Type)) {
        PyErr_SetString(PyExc_TypeError, "freeze_plain(): frozen_dict_type must be a dict subclass");
        return NULL;
    }
    if (!PyAnySet_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "freeze_plain(): leaf_types must be a set");
        return NULL;
    }
    Freezer f = {(PyTypeObject *)args[1], args[2], args[3], PyTuple_New(0)};
    if (f.no_args == NULL) {
        return NULL;
    }
    PyObject *frozen = freeze(&f, args[0], 0);
    Py_DECREF(f.no_args);
    return frozen;
}

static PyMethodDef methods[] = {
    {"freeze_plain", (PyCFunction)(void (*)(void))freeze_plain, METH_FASTCALL,
     "freeze_plain(value, frozen_dict_type, leaf_types, not_plain)\n--\n\n"
     "The plain-data fast path of freeze_deep; not_plain when value needs the Python walker."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "robotlab.parallel._freeze",
    .m_doc = "C fast path of robotlab.parallel.boundary.freeze_deep (optional; pure Python otherwise).",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__freeze(void)
{
    return PyModuleDef_Init(&module);
}

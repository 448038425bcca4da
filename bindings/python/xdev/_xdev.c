/*
 * _xdev.c - the C half of the Python binding: Device, Request, Message and
 * Status over include/xdev.h. The Python half (__init__.py) adds pickled
 * objects and asyncio on top.
 *
 * Buffers: anything with the buffer protocol, C-contiguous; sends take
 * read-only buffers, receives need writable ones. A request holds its
 * Py_buffer (so the memory stays put and alive) until it is reaped.
 *
 * Requests: the C xdev_request_t is malloc'd, so it never moves with the
 * Python object. Every active request is also in its device's `live` set:
 * a request the program drops stays alive, with its buffer, until it
 * completes and is reaped by a later wait/test/peek, or until the device
 * is closed (xdev_finalize abandons it; only then is its storage freed).
 * Nothing is ever reaped twice: `active` is cleared by the one reap.
 *
 * Blocking: every call that may wait first tests a few times with the GIL
 * held (a short message's answer is usually there within a microsecond,
 * and giving the GIL up and taking it back costs about as much), then
 * releases the GIL and waits in slices of at most 20 ms (a spin on
 * xdev_test, then a sleep on xdev_fd after xdev_arm), then takes the GIL
 * back, runs the signal handlers and looks for wakeup():
 * Ctrl-C raises KeyboardInterrupt within a slice, wakeup() Error
 * (ERR_WOKEN). An interrupted or woken receive that has not begun is
 * cancelled; a blocking call's request that has begun is finished first,
 * since its buffer cannot be left to xdev, while an interrupted
 * Request.wait() leaves its begun request to the Request. close() wakes
 * the calls waiting without the GIL and finalizes once they have left
 * (`inside`). The blocking calls keep
 * their request and buffer view on the C stack and leave `user` NULL: no
 * Request object is made, and peek() passes over such a request (its
 * caller reaps it).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xdev.h>

#define SLICE_MS 20
#define SPIN_TESTS 2000
#define GIL_SPIN_TESTS 64 /* about 2 us of xdev_test */

static PyObject *Error, *TruncationError, *PeerError;
static PyTypeObject StatusType;

/* ---- errors and statuses ---- */

static PyObject *status_new(const xdev_status_t *st)
{
    PyObject *s = PyStructSequence_New(&StatusType);
    if (!s)
        return NULL;
    PyStructSequence_SET_ITEM(s, 0, PyLong_FromLong(st->source));
    PyStructSequence_SET_ITEM(s, 1, PyLong_FromLong(st->tag));
    PyStructSequence_SET_ITEM(s, 2, PyLong_FromLong(st->ctx));
    PyStructSequence_SET_ITEM(s, 3, PyLong_FromSize_t(st->count));
    PyStructSequence_SET_ITEM(s, 4, PyLong_FromSize_t(st->msg_len));
    PyStructSequence_SET_ITEM(s, 5, PyLong_FromLong(st->error));
    return s;
}

/* Raise the exception for code; status (may be NULL) rides along. */
static PyObject *raise_code(int code, const xdev_status_t *st)
{
    PyObject *type = code == XDEV_ERR_TRUNCATE ? TruncationError
                     : code == XDEV_ERR_PEER || code == XDEV_ERR_PEER_PENDING ? PeerError
                     : code == XDEV_ERR_ARG ? PyExc_ValueError
                                            : Error;
    if (type == PyExc_ValueError) {
        PyErr_Format(type, "xdev: %s", xdev_strerror(code));
        return NULL;
    }
    PyObject *status = st ? status_new(st) : Py_NewRef(Py_None);
    PyObject *exc = status ? PyObject_CallFunction(type, "isO", code, xdev_strerror(code), status)
                           : NULL;
    Py_XDECREF(status);
    if (exc) {
        PyErr_SetObject(type, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* ---- the device ---- */

typedef struct {
    PyObject_HEAD
    xdev_t *dev;
    int fd;           /* xdev_fd, made on first need; -1 before */
    PyObject *live;   /* set of active Request objects */
    pid_t pid;        /* the process that made dev: a forked child's
                       * close() leaves it alone */
    /* Changed only with the GIL held: */
    unsigned wakes;   /* wakeup() calls, as blocked calls see them */
    int inside;       /* calls waiting in dev without the GIL */
    bool closing;     /* close() waits for those to leave */
    bool wildcard_fails; /* made with XDEV_FLAG_WILDCARD_FAILS */
} DeviceObject;

typedef struct {
    PyObject_HEAD
    DeviceObject *device;
    xdev_request_t *req; /* malloc'd: never moves */
    Py_buffer view;
    bool has_view;
    bool active;
    PyObject *keep;      /* an object to hold until reaped (a Message's) */
} RequestObject;

static PyTypeObject DeviceType, RequestType, MessageType;

static bool device_ok(DeviceObject *d)
{
    bool ok = d->dev && !d->closing;
    if (!ok)
        PyErr_SetString(PyExc_ValueError, "xdev: the device is closed");
    return ok;
}

/* A call about to wait in dev without the GIL: close() waits until it
 * leaves. The number returned tells it whether wakeup() came since. */
static unsigned enter(DeviceObject *d)
{
    d->inside++;
    return d->wakes;
}

static void leave(DeviceObject *d) { d->inside--; }

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* One look of a blocking call (xdev_test, xdev_iprobe, ...), which also
 * drives progress: 1 done, 0 not yet, < 0 an xdev error. */
typedef int (*attempt_fn)(xdev_t *dev, void *arg);

/* Attempt for one slice at most (without the GIL): a spin, then sleeps on
 * the device fd. */
static int wait_slice(xdev_t *dev, int fd, attempt_fn attempt, void *arg)
{
    int rc = 0;
    double end = now_ms() + SLICE_MS;
    for (int i = 0; i < SPIN_TESTS && rc == 0; i++)
        rc = attempt(dev, arg);
    while (rc == 0 && now_ms() < end) {
        if (fd >= 0 && xdev_arm(dev) == XDEV_OK)
            poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, SLICE_MS);
        rc = attempt(dev, arg);
    }
    return rc;
}

/* Attempt until done, in slices; between them, with the GIL and if
 * `watch`, run the signal handlers and look for wakeup(). 1 done, < 0 an
 * xdev error, XDEV_ERR_WOKEN if woken, or 0 when a signal handler raised. */
static int wait_until(DeviceObject *d, attempt_fn attempt, void *arg, bool watch)
{
    int rc = 0;
    for (int i = 0; i < GIL_SPIN_TESTS && rc == 0; i++)
        rc = attempt(d->dev, arg);
    if (rc != 0)
        return rc;
    if (d->fd < 0) {
        int fd = xdev_fd(d->dev);
        d->fd = fd >= 0 ? fd : -1;
    }
    unsigned since = enter(d);
    while (rc == 0) {
        Py_BEGIN_ALLOW_THREADS
        rc = wait_slice(d->dev, d->fd, attempt, arg);
        Py_END_ALLOW_THREADS
        if (rc != 0 || !watch)
            continue;
        if (PyErr_CheckSignals() < 0)
            break;
        if (d->wakes != since) {
            rc = XDEV_ERR_WOKEN;
            break;
        }
    }
    leave(d);
    return rc;
}

struct test_args {
    xdev_request_t *req;
    xdev_status_t *st;
};

static int attempt_test(xdev_t *dev, void *arg)
{
    (void)dev;
    struct test_args *a = arg;
    int done = 0, rc = xdev_test(a->req, &done, a->st);
    return rc < 0 ? rc : done;
}

/* wait_request: a signal handler raised, and the request, which had
 * begun, is still active. */
#define INTERRUPTED_ACTIVE 2

/* Block until req completes, reaping it into *st. Returns 0, an xdev
 * error (< 0), 1 when a signal handler raised, or INTERRUPTED_ACTIVE.
 * Interrupted, or woken when `mine` (a blocking call's own request), the
 * request is cancelled and waited for, so that its memory is the
 * caller's again: woken, the call then returns XDEV_ERR_WOKEN if the
 * cancel took, as if not woken if it was too late. A Request's wait()
 * that is woken returns XDEV_ERR_WOKEN with the request still active; one
 * interrupted returns at once too when its request has begun (a send to
 * another rank, a matched receive), which the Request keeps, buffer and
 * all: Ctrl-C does not wait for a receiver that may never come. */
static int wait_request(DeviceObject *d, xdev_request_t *req, xdev_status_t *st, bool mine)
{
    struct test_args a = { req, st };
    int rc = wait_until(d, attempt_test, &a, true);
    if (rc == 1 || (rc < 0 && (rc != XDEV_ERR_WOKEN || !mine)))
        return rc == 1 ? 0 : rc;
    int why = rc; /* 0: a signal handler raised; or woken */
    if (xdev_cancel(req) == XDEV_ERR_TOO_LATE && !mine)
        return INTERRUPTED_ACTIVE; /* else it finishes whole */
    rc = wait_until(d, attempt_test, &a, false);
    if (rc < 0)
        return rc;
    if (why == 0)
        return 1;
    return st->error == XDEV_ERR_CANCELED ? XDEV_ERR_WOKEN : 0;
}

/* A buffer argument: C-contiguous, and writable for a receive. An
 * object with no buffer at all is the wrong type (TypeError, as
 * Python's own calls say); a buffer of the wrong kind is a BufferError. */
static int get_buffer(PyObject *obj, Py_buffer *view, bool writable)
{
    if (!PyObject_CheckBuffer(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "xdev needs a buffer (bytes, bytearray, memoryview, numpy array), not %.100s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (PyObject_GetBuffer(obj, view, (writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) |
                                          PyBUF_C_CONTIGUOUS) < 0) {
        if (PyErr_ExceptionMatches(PyExc_BufferError) || PyErr_ExceptionMatches(PyExc_TypeError) ||
            PyErr_ExceptionMatches(PyExc_ValueError)) { /* numpy says ValueError */
            PyErr_Clear();
            PyErr_Format(PyExc_BufferError,
                         "xdev needs a C-contiguous%s buffer (bytes, bytearray, memoryview, "
                         "numpy array), not %.100s",
                         writable ? ", writable" : "", Py_TYPE(obj)->tp_name);
        }
        return -1;
    }
    return 0;
}

/* Arguments are read straight from the vectorcall (METH_FASTCALL):
 * PyArg_ParseTupleAndKeywords would cost a tenth of a short message's
 * round trip. Fills given[0..n-1] from positional and keyword arguments
 * named names[]; the first `required` must be there. */
static int gather(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                  const char *const *names, int n, int required, PyObject **given)
{
    if (nargs > n)
        return PyErr_Format(PyExc_TypeError, "xdev: at most %d arguments, %zd given", n, nargs),
               -1;
    for (int j = 0; j < n; j++)
        given[j] = j < nargs ? args[j] : NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        int j = 0;
        while (j < n && PyUnicode_CompareWithASCIIString(name, names[j]) != 0)
            j++;
        if (j == n)
            return PyErr_Format(PyExc_TypeError, "xdev: no argument named '%U'", name), -1;
        if (given[j])
            return PyErr_Format(PyExc_TypeError, "xdev: '%s' given twice", names[j]), -1;
        given[j] = args[nargs + k];
    }
    for (int j = 0; j < required; j++)
        if (!given[j])
            return PyErr_Format(PyExc_TypeError, "xdev: '%s' is missing", names[j]), -1;
    return 0;
}

/* An int argument, left at its default if not given. Out of an int's
 * range is a ValueError, as any other bad rank, tag or context. */
static int int_arg(PyObject *o, const char *name, int *out)
{
    if (!o)
        return 0;
    long x = PyLong_AsLong(o);
    if (x == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
        x = LONG_MAX;
    }
    if (x < INT_MIN || x > INT_MAX)
        return PyErr_Format(PyExc_ValueError, "xdev: '%s' is out of range", name), -1;
    *out = (int)x;
    return 0;
}

/* Point to point: send (buf, dest, tag=0, ctx=0), receive (buf,
 * source=ANY_SOURCE, tag=ANY_TAG, ctx=0); the first may be called obj.
 * v gets peer, tag, ctx. */
static int parse_p2p(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, bool recv,
                     const char *first, PyObject **buf, int v[3])
{
    const char *const names[] = { first, recv ? "source" : "dest", "tag", "ctx" };
    PyObject *given[4];
    if (gather(args, nargs, kwnames, names, 4, recv ? 1 : 2, given) < 0)
        return -1;
    *buf = given[0];
    v[0] = recv ? XDEV_ANY_SOURCE : 0;
    v[1] = recv ? XDEV_ANY_TAG : 0;
    v[2] = 0;
    for (int j = 1; j < 4; j++)
        if (int_arg(given[j], names[j], &v[j - 1]) < 0)
            return -1;
    return 0;
}

/* Matching: (source=ANY_SOURCE, tag=ANY_TAG, ctx=0). */
static int parse_match(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, int *src,
                       int *tag, int *ctx)
{
    static const char *const names[] = { "source", "tag", "ctx" };
    PyObject *given[3];
    *src = XDEV_ANY_SOURCE;
    *tag = XDEV_ANY_TAG;
    *ctx = 0;
    return gather(args, nargs, kwnames, names, 3, 0, given) < 0 ||
                   int_arg(given[0], names[0], src) < 0 || int_arg(given[1], names[1], tag) < 0 ||
                   int_arg(given[2], names[2], ctx) < 0
               ? -1
               : 0;
}

static RequestObject *request_new(DeviceObject *d)
{
    RequestObject *r = PyObject_New(RequestObject, &RequestType);
    if (!r)
        return NULL;
    r->req = PyMem_RawCalloc(1, sizeof *r->req);
    r->device = (DeviceObject *)Py_NewRef(d);
    r->has_view = false;
    r->active = false;
    r->keep = NULL;
    if (!r->req) {
        Py_DECREF(r);
        return (RequestObject *)PyErr_NoMemory();
    }
    r->req->user = r;
    return r;
}

/* The request was posted: it lives in its device's set until reaped. */
static PyObject *request_posted(RequestObject *r)
{
    r->active = true;
    if (PySet_Add(r->device->live, (PyObject *)r) < 0)
        return NULL; /* cannot happen short of memory; it stays in xdev */
    return (PyObject *)r;
}

/* Reaped: give back the buffer and leave the live set. */
static void request_reaped(RequestObject *r)
{
    r->active = false;
    if (r->has_view) {
        PyBuffer_Release(&r->view);
        r->has_view = false;
    }
    Py_CLEAR(r->keep);
    PySet_Discard(r->device->live, (PyObject *)r);
}

enum op { OP_SEND, OP_SSEND, OP_RECV };

static int start(xdev_t *dev, enum op op, const Py_buffer *view, const int v[3],
                 xdev_request_t *req)
{
    size_t len = (size_t)view->len;
    return op == OP_RECV    ? xdev_irecv(dev, view->buf, len, v[0], v[1], v[2], req)
           : op == OP_SSEND ? xdev_issend(dev, view->buf, len, v[0], v[1], v[2], req)
                            : xdev_isend(dev, view->buf, len, v[0], v[1], v[2], req);
}

static PyObject *post(DeviceObject *d, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames, enum op op)
{
    PyObject *buf;
    int v[3];
    if (!device_ok(d) || parse_p2p(args, nargs, kwnames, op == OP_RECV, "buf", &buf, v) < 0)
        return NULL;
    RequestObject *r = request_new(d);
    if (!r)
        return NULL;
    if (get_buffer(buf, &r->view, op == OP_RECV) < 0) {
        Py_DECREF(r);
        return NULL;
    }
    r->has_view = true;
    int rc = start(d->dev, op, &r->view, v, r->req);
    if (rc != XDEV_OK) {
        Py_DECREF(r); /* releases the view */
        return raise_code(rc, NULL);
    }
    if (!request_posted(r)) {
        Py_DECREF(r);
        return NULL;
    }
    return (PyObject *)r;
}

/* What a blocking call returns once its request was waited for. */
static PyObject *outcome(int rc, const xdev_status_t *st, bool want_status)
{
    if (rc == 1)
        return NULL; /* KeyboardInterrupt, or what the handler raised */
    if (rc < 0)
        return raise_code(rc, NULL);
    if (st->error != XDEV_OK)
        return raise_code(st->error, st);
    return want_status ? status_new(st) : Py_NewRef(Py_None);
}

/* A blocking call: request and view on this stack, since the call cannot
 * return before the request is reaped (wait_request finishes or cancels
 * it even when interrupted). */
static PyObject *blocking(DeviceObject *d, PyObject *buf, const int v[3], enum op op)
{
    Py_buffer view;
    if (get_buffer(buf, &view, op == OP_RECV) < 0)
        return NULL;
    xdev_request_t req = { .user = NULL };
    xdev_status_t st;
    int rc = start(d->dev, op, &view, v, &req);
    if (rc == XDEV_OK)
        rc = wait_request(d, &req, &st, true);
    PyBuffer_Release(&view);
    return outcome(rc, &st, op == OP_RECV);
}

static PyObject *call_blocking(DeviceObject *d, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames, enum op op)
{
    PyObject *buf;
    int v[3];
    if (!device_ok(d) || parse_p2p(args, nargs, kwnames, op == OP_RECV, "buf", &buf, v) < 0)
        return NULL;
    return blocking(d, buf, v, op);
}

#define P2P_ARGS DeviceObject *d, PyObject *const *a, Py_ssize_t n, PyObject *k
static PyObject *dev_isend(P2P_ARGS) { return post(d, a, n, k, OP_SEND); }
static PyObject *dev_issend(P2P_ARGS) { return post(d, a, n, k, OP_SSEND); }
static PyObject *dev_irecv(P2P_ARGS) { return post(d, a, n, k, OP_RECV); }
static PyObject *dev_send(P2P_ARGS) { return call_blocking(d, a, n, k, OP_SEND); }
static PyObject *dev_ssend(P2P_ARGS) { return call_blocking(d, a, n, k, OP_SSEND); }
static PyObject *dev_recv(P2P_ARGS) { return call_blocking(d, a, n, k, OP_RECV); }

/* Pickled objects, with protocol 5 (pickle's functions, taken when the
 * module loads, so the calls cost no Python frame). */
static PyObject *pickle_dumps, *pickle_loads, *pickle_protocol;

/* send_obj(obj, dest, tag=0, ctx=0) */
static PyObject *dev_send_obj(P2P_ARGS)
{
    PyObject *obj;
    int v[3];
    if (!device_ok(d) || parse_p2p(a, n, k, false, "obj", &obj, v) < 0)
        return NULL;
    PyObject *data = PyObject_CallFunctionObjArgs(pickle_dumps, obj, pickle_protocol, NULL);
    if (!data)
        return NULL;
    PyObject *r = blocking(d, data, v, OP_SEND);
    Py_DECREF(data);
    return r;
}


/* iprobe(source, tag, ctx) -> Status or None */
static PyObject *dev_iprobe(P2P_ARGS)
{
    int src, tag, ctx, found = 0;
    xdev_status_t st;
    if (!device_ok(d) || parse_match(a, n, k, &src, &tag, &ctx) < 0)
        return NULL;
    int rc = xdev_iprobe(d->dev, src, tag, ctx, &found, &st);
    if (rc != XDEV_OK)
        return raise_code(rc, NULL);
    return found ? status_new(&st) : Py_NewRef(Py_None);
}

/* The blocking probes look with xdev_iprobe / xdev_improbe in slices (so
 * that Ctrl-C and wakeup() get through); a named source that died with
 * nothing matching left makes them ask the blocking call, which then fails
 * at once with XDEV_ERR_PEER (or finds what came in meanwhile). */
struct probe_args {
    int src, tag, ctx;
    xdev_status_t *st;
    xdev_message_t *msg; /* NULL: a plain probe */
    bool any_death;      /* a wildcard probe that any death fails */
    int dead;            /* dead_peers() when it began */
};

static int dead_peers(xdev_t *dev)
{
    xdev_stats_t st;
    return xdev_stats(dev, &st) == XDEV_OK ? st.peers_dead : 0;
}

/* A blocking probe here waits in slices of the nonblocking one, not in
 * xdev_probe, so with XDEV_FLAG_WILDCARD_FAILS a wildcard one looks for a
 * death itself: one noticed once it began fails it, as in C. */
static void probe_begin(DeviceObject *d, struct probe_args *a)
{
    a->any_death = a->src == XDEV_ANY_SOURCE && d->wildcard_fails;
    a->dead = a->any_death ? dead_peers(d->dev) : 0;
}

static int attempt_probe(xdev_t *dev, void *arg)
{
    struct probe_args *a = arg;
    int found = 0;
    int rc = a->msg ? xdev_improbe(dev, a->src, a->tag, a->ctx, &found, a->msg, a->st)
                    : xdev_iprobe(dev, a->src, a->tag, a->ctx, &found, a->st);
    if (rc < 0 || found)
        return rc < 0 ? rc : 1;
    if (a->any_death && dead_peers(dev) != a->dead) {
        *a->st = (xdev_status_t){ .source = XDEV_ANY_SOURCE, .tag = a->tag, .ctx = a->ctx,
                                  .error = XDEV_ERR_PEER_PENDING };
        return XDEV_ERR_PEER_PENDING;
    }
    if (a->src == XDEV_ANY_SOURCE || xdev_peer_state(dev, a->src) != XDEV_PEER_DEAD)
        return 0;
    rc = a->msg ? xdev_mprobe(dev, a->src, a->tag, a->ctx, a->msg, a->st)
                : xdev_probe(dev, a->src, a->tag, a->ctx, a->st);
    return rc < 0 ? rc : 1;
}

/* The Status a failed probe raises with: a dead sender's (its cut marker,
 * or the dead source named), or a wildcard's that a death failed. */
static const xdev_status_t *failed_status(int rc, const xdev_status_t *st)
{
    return (rc == XDEV_ERR_PEER && st->error) || rc == XDEV_ERR_PEER_PENDING ? st : NULL;
}

/* probe(source, tag, ctx) -> Status; as xdev_probe, a dead sender's cut
 * marker raises PeerError (with its Status). */
static PyObject *dev_probe(P2P_ARGS)
{
    xdev_status_t st;
    struct probe_args pa = { .st = &st };
    if (!device_ok(d) || parse_match(a, n, k, &pa.src, &pa.tag, &pa.ctx) < 0)
        return NULL;
    probe_begin(d, &pa);
    int rc = wait_until(d, attempt_probe, &pa, true);
    if (rc == 0)
        return NULL; /* what a signal handler raised */
    if (rc < 0)
        return raise_code(rc, failed_status(rc, &st));
    return st.error ? raise_code(st.error, &st) : status_new(&st);
}

/* The matched probe: a Message owns the claimed message until received. */
typedef struct {
    PyObject_HEAD
    DeviceObject *device;
    xdev_message_t msg;
    xdev_status_t st;
    bool used;
} MessageObject;

static PyObject *message_new(DeviceObject *d, const xdev_message_t *m, const xdev_status_t *st)
{
    MessageObject *o = PyObject_New(MessageObject, &MessageType);
    if (!o)
        return NULL;
    o->device = (DeviceObject *)Py_NewRef(d);
    o->msg = *m;
    o->st = *st;
    o->used = false;
    return (PyObject *)o;
}

/* Claim a matching message into *m: 1 found, 0 not (only when !block),
 * -1 with a Python exception set (an xdev error, or what a signal handler
 * raised). Not blocking, it is xdev_improbe's answer alone. */
static int claim(P2P_ARGS, bool block, xdev_message_t *m, xdev_status_t *st)
{
    struct probe_args pa = { .st = st, .msg = m };
    if (!device_ok(d) || parse_match(a, n, k, &pa.src, &pa.tag, &pa.ctx) < 0)
        return -1;
    int found = 0, rc;
    if (block) {
        probe_begin(d, &pa);
        rc = wait_until(d, attempt_probe, &pa, true);
        if (rc == 0)
            return -1; /* what a signal handler raised */
        found = rc == 1;
    } else {
        rc = xdev_improbe(d->dev, pa.src, pa.tag, pa.ctx, &found, m, st);
    }
    if (rc < 0)
        return raise_code(rc, failed_status(rc, st)), -1;
    return found;
}

/* improbe(source, tag, ctx) -> Message or None; mprobe blocks. */
static PyObject *matched_probe(P2P_ARGS, bool block)
{
    xdev_status_t st = { 0 };
    xdev_message_t m;
    int found = claim(d, a, n, k, block, &m, &st);
    return found < 0 ? NULL : found ? message_new(d, &m, &st) : Py_NewRef(Py_None);
}

/* recv_bytes(source, tag, ctx) -> (bytes, Status): a whole message of any
 * length, claimed by a matched probe and received into new bytes (what
 * recv_obj unpickles). */
static PyObject *dev_recv_bytes(P2P_ARGS)
{
    xdev_status_t st = { 0 };
    xdev_message_t m;
    if (claim(d, a, n, k, true, &m, &st) < 0)
        return NULL;
    PyObject *data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)st.msg_len);
    xdev_request_t req = { .user = NULL };
    /* Without memory the claimed message is still taken, into nothing, so
     * it does not stay claimed forever. */
    int rc = xdev_imrecv(d->dev, data ? PyBytes_AS_STRING(data) : NULL, data ? st.msg_len : 0,
                         &m, &req);
    if (rc == XDEV_OK)
        rc = wait_request(d, &req, &st, true);
    PyObject *status = outcome(rc, &st, true);
    if (!data || !status) {
        Py_XDECREF(data);
        Py_XDECREF(status);
        return data ? NULL : PyErr_NoMemory();
    }
    return Py_BuildValue("(NN)", data, status);
}

/* recv_obj(source, tag, ctx) -> (obj, Status): what send_obj sent. The
 * matched probe claims the message first, so threads receiving at once
 * never take each other's. */
static PyObject *dev_recv_obj(P2P_ARGS)
{
    PyObject *pair = dev_recv_bytes(d, a, n, k);
    if (!pair)
        return NULL;
    PyObject *obj = PyObject_CallOneArg(pickle_loads, PyTuple_GET_ITEM(pair, 0));
    PyObject *result = obj ? PyTuple_Pack(2, obj, PyTuple_GET_ITEM(pair, 1)) : NULL;
    Py_XDECREF(obj);
    Py_DECREF(pair);
    return result;
}

static PyObject *dev_improbe(P2P_ARGS) { return matched_probe(d, a, n, k, false); }
static PyObject *dev_mprobe(P2P_ARGS) { return matched_probe(d, a, n, k, true); }

/* Progress without handing anything out: 1 once anything moved or the
 * deadline (ms of now_ms(); 0: none) passed. */
static int attempt_progress(xdev_t *dev, void *arg)
{
    const double *end = arg;
    int rc = xdev_progress(dev);
    return rc < 0 ? rc : rc > 0 || (*end && now_ms() >= *end);
}

/* peek(timeout=-1) -> the Request object that completed (the very one
 * posted), or None when the timeout (ms; 0 looks once, -1 forever)
 * passed. Below -1 is refused, as xdev_peek_timed refuses it.
 * Completions are handed out only with the GIL held: the request (a
 * Request's, or a blocking call's on its caller's stack) cannot be reaped
 * and freed by its owner until we have read it; without the GIL, the wait
 * only drives progress. */
static PyObject *dev_peek(DeviceObject *d, PyObject *args)
{
    int timeout = -1;
    PyObject *o = NULL;
    if (!device_ok(d) || !PyArg_ParseTuple(args, "|O", &o) || int_arg(o, "timeout", &timeout) < 0)
        return NULL;
    if (timeout < -1)
        return raise_code(XDEV_ERR_ARG, NULL);
    double end = timeout > 0 ? now_ms() + timeout : 0;
    xdev_request_t *done = NULL;
    int rc;
    for (;;) {
        do /* a blocking call's own request: its caller reaps it */
            rc = xdev_peek_timed(d->dev, 0, &done);
        while (rc == XDEV_OK && !done->user);
        if (rc != XDEV_ERR_TIMEOUT || timeout == 0 || (end && now_ms() >= end))
            break;
        rc = wait_until(d, attempt_progress, &end, true);
        if (rc == 0)
            return NULL; /* what a signal handler raised */
        if (rc < 0)
            break;
    }
    if (rc == XDEV_ERR_TIMEOUT)
        return Py_NewRef(Py_None);
    if (rc != XDEV_OK)
        return raise_code(rc, NULL);
    /* Still active for wait/test, which reap it and give its status. */
    return Py_NewRef((PyObject *)done->user);
}

/* Every call blocked in the device at this moment raises Error (code
 * ERR_WOKEN), as in C; a blocking call whose request had begun completes
 * instead. Blocked calls see the count change between slices (xdev_wakeup
 * ends xdev's own sleeps at once). */
static void wake_all(DeviceObject *d)
{
    d->wakes++;
    xdev_wakeup(d->dev);
}

static PyObject *dev_wakeup(DeviceObject *d, PyObject *unused)
{
    (void)unused;
    if (!device_ok(d))
        return NULL;
    wake_all(d);
    Py_RETURN_NONE;
}

static PyObject *dev_progress(DeviceObject *d, PyObject *unused)
{
    (void)unused;
    if (!device_ok(d))
        return NULL;
    int rc = xdev_progress(d->dev);
    return rc < 0 ? raise_code(rc, NULL) : PyBool_FromLong(rc);
}

static PyObject *dev_fileno(DeviceObject *d, PyObject *unused)
{
    (void)unused;
    if (!device_ok(d))
        return NULL;
    int fd = xdev_fd(d->dev);
    return fd < 0 ? raise_code(fd, NULL) : PyLong_FromLong(fd);
}

/* arm() -> True: safe to sleep on fileno(); False: progress first. */
static PyObject *dev_arm(DeviceObject *d, PyObject *unused)
{
    (void)unused;
    if (!device_ok(d))
        return NULL;
    int rc = xdev_arm(d->dev);
    if (rc == XDEV_OK || rc == XDEV_ERR_BUSY)
        return PyBool_FromLong(rc == XDEV_OK);
    return raise_code(rc, NULL);
}

static PyObject *dev_peer_state(DeviceObject *d, PyObject *args)
{
    PyObject *o;
    int rank;
    if (!device_ok(d) || !PyArg_ParseTuple(args, "O", &o) || int_arg(o, "rank", &rank) < 0)
        return NULL;
    int rc = xdev_peer_state(d->dev, rank);
    return rc < 0 ? raise_code(rc, NULL) : PyLong_FromLong(rc);
}

static PyObject *dev_stats(DeviceObject *d, PyObject *unused)
{
    (void)unused;
    xdev_stats_t s;
    if (!device_ok(d))
        return NULL;
    int rc = xdev_stats(d->dev, &s);
    if (rc != XDEV_OK)
        return raise_code(rc, NULL);
    PyObject *tps = PyDict_New();
    for (int i = 0; tps && i < s.ntransports; i++) {
        PyObject *t = Py_BuildValue("{s:K,s:K,s:K,s:K}", "msgs_sent", s.transport[i].msgs_sent,
                                    "bytes_sent", s.transport[i].bytes_sent, "msgs_received",
                                    s.transport[i].msgs_received, "bytes_received",
                                    s.transport[i].bytes_received);
        if (!t || PyDict_SetItemString(tps, s.transport[i].name, t) < 0)
            Py_CLEAR(tps);
        Py_XDECREF(t);
    }
    PyObject *out = tps ? Py_BuildValue("{s:O,s:K,s:K,s:K,s:n,s:n,s:i}", "transports", tps,
                                        "self_msgs", s.self_msgs, "rendezvous_sent",
                                        s.rendezvous_sent, "rendezvous_received",
                                        s.rendezvous_received, "unexpected_bytes",
                                        (Py_ssize_t)s.unexpected_bytes, "unexpected_peak",
                                        (Py_ssize_t)s.unexpected_peak, "peers_dead", s.peers_dead)
                        : NULL;
    Py_XDECREF(tps);
    return out;
}

/* Finalize: what was never reaped is abandoned by xdev and freed here.
 * Calls blocked in the device are woken first, and finalize waits until
 * they have left (each raises, or completes a request that had begun). A
 * forked child only lets go of its copy: finalizing would tear down the
 * parent's connections and shared memory. */
static PyObject *dev_close(DeviceObject *d, PyObject *unused)
{
    (void)unused;
    if (!d->dev || d->closing)
        Py_RETURN_NONE;
    d->closing = true;
    int rc = XDEV_OK;
    if (d->pid == getpid()) {
        while (d->inside > 0) {
            wake_all(d);
            Py_BEGIN_ALLOW_THREADS
            poll(NULL, 0, 1);
            Py_END_ALLOW_THREADS
        }
        xdev_t *dev = d->dev;
        d->dev = NULL;
        Py_BEGIN_ALLOW_THREADS
        rc = xdev_finalize(dev);
        Py_END_ALLOW_THREADS
    }
    d->dev = NULL;
    d->closing = false;
    PyObject *left = PySequence_List(d->live);
    for (Py_ssize_t i = 0; left && i < PyList_GET_SIZE(left); i++)
        request_reaped((RequestObject *)PyList_GET_ITEM(left, i));
    Py_XDECREF(left);
    if (rc != XDEV_OK && rc != XDEV_ERR_CANCELED)
        return raise_code(rc, NULL);
    Py_RETURN_NONE;
}

/* options: a mapping of option name -> value (str, or int written in
 * decimal) made into NULL-terminated "NAME=value" strings in one malloc'd
 * block (the pointers, then the text); *out NULL when there are none.
 * 0, or -1 with an exception set. */
static int options_build(PyObject *options, char ***out)
{
    *out = NULL;
    if (!options || options == Py_None)
        return 0;
    PyObject *items = PyMapping_Items(options); /* what has .items() */
    if (!items) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "xdev: options must be a mapping of str to str, "
                                          "not %.100s", Py_TYPE(options)->tp_name);
        }
        return -1;
    }
    Py_ssize_t n = PyList_GET_SIZE(items);
    PyObject **text = n ? PyMem_Calloc((size_t)n * 2, sizeof *text) : NULL;
    size_t bytes = (size_t)(n + 1) * sizeof(char *);
    int rc = n && !text ? (PyErr_NoMemory(), -1) : 0;
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        PyObject *item = PyList_GET_ITEM(items, i), *name, *value;
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            rc = (PyErr_SetString(PyExc_TypeError, "xdev: options' items must be pairs"), -1);
            break;
        }
        name = PyTuple_GET_ITEM(item, 0);
        value = PyTuple_GET_ITEM(item, 1);
        if (!PyUnicode_Check(name)) {
            rc = (PyErr_Format(PyExc_TypeError, "xdev: an option's name is a str, not %.100s",
                               Py_TYPE(name)->tp_name), -1);
            break;
        }
        if (PyLong_Check(value)) { /* in decimal; True and False as 1 and 0 */
            PyObject *x = PyNumber_Long(value);
            value = x ? PyObject_Str(x) : NULL;
            Py_XDECREF(x);
        } else if (PyUnicode_Check(value)) {
            Py_INCREF(value);
        } else {
            rc = (PyErr_Format(PyExc_TypeError, "xdev: option %R: the value is a str or an int, "
                               "not %.100s", name, Py_TYPE(value)->tp_name), -1);
            break;
        }
        text[2 * i] = Py_NewRef(name);
        text[2 * i + 1] = value;
        Py_ssize_t nlen, vlen;
        const char *ns = value ? PyUnicode_AsUTF8AndSize(name, &nlen) : NULL;
        const char *vs = ns ? PyUnicode_AsUTF8AndSize(value, &vlen) : NULL;
        if (!vs)
            rc = -1;
        else if (nlen == 0 || strchr(ns, '=') || strlen(ns) != (size_t)nlen ||
                 strlen(vs) != (size_t)vlen)
            rc = (PyErr_Format(PyExc_ValueError, "xdev: option %R: a name is not empty and has "
                               "no '='; a name or value has no NUL", name), -1);
        else
            bytes += (size_t)nlen + (size_t)vlen + 2;
    }
    char **list = rc == 0 && n ? PyMem_Malloc(bytes) : NULL;
    if (rc == 0 && n && !list)
        rc = (PyErr_NoMemory(), -1);
    if (list) {
        char *p = (char *)(list + n + 1);
        for (Py_ssize_t i = 0; i < n; i++) {
            list[i] = p;
            p += sprintf(p, "%s=%s", PyUnicode_AsUTF8(text[2 * i]),
                         PyUnicode_AsUTF8(text[2 * i + 1])) + 1;
        }
        list[n] = NULL;
    }
    for (Py_ssize_t i = 0; text && i < 2 * n; i++)
        Py_XDECREF(text[i]);
    PyMem_Free(text);
    Py_DECREF(items);
    *out = list;
    return rc;
}

static int dev_init(DeviceObject *d, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "options", NULL };
    PyObject *options = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$O:Device", kwlist, &options))
        return -1;
    if (d->dev)
        return 0;
    char **list;
    if (options_build(options, &list) < 0)
        return -1;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    if (list) { /* xdev_init copies the options: the strings go after */
        xdev_config_t cfg;
        rc = xdev_config_init(&cfg);
        if (rc == XDEV_OK) {
            cfg.options = (const char *const *)list;
            rc = xdev_init(&cfg, &d->dev);
        }
    } else {
        rc = xdev_init(NULL, &d->dev);
    }
    Py_END_ALLOW_THREADS
    bool given = list != NULL;
    PyMem_Free(list);
    d->pid = getpid();
    xdev_config_t made; /* the flags xdev_init took from the environment */
    d->wildcard_fails = xdev_config_init(&made) == XDEV_OK &&
                        (made.flags & XDEV_FLAG_WILDCARD_FAILS);
    if (rc != XDEV_OK) {
        d->dev = NULL;
        if (rc == XDEV_ERR_ARG && given)
            PyErr_Format(PyExc_ValueError, "xdev: %s (in options, a name that is not a transport "
                         "option, or a value the option refuses)", xdev_strerror(rc));
        else
            raise_code(rc, NULL);
        return -1;
    }
    return 0;
}

static PyObject *dev_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)args, (void)kw;
    DeviceObject *d = (DeviceObject *)type->tp_alloc(type, 0);
    if (d) {
        d->fd = -1;
        d->live = PySet_New(NULL);
        if (!d->live)
            Py_CLEAR(d);
    }
    return (PyObject *)d;
}

static void dev_dealloc(DeviceObject *d)
{
    PyObject_GC_UnTrack(d);
    if (d->dev) {
        PyObject *r = dev_close(d, NULL);
        if (!r)
            PyErr_WriteUnraisable((PyObject *)d);
        Py_XDECREF(r);
    }
    Py_CLEAR(d->live);
    Py_TYPE(d)->tp_free((PyObject *)d);
}

static int dev_traverse(DeviceObject *d, visitproc visit, void *arg)
{
    Py_VISIT(d->live);
    return 0;
}

static PyObject *dev_enter(PyObject *d, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(d);
}

static PyObject *dev_exit(DeviceObject *d, PyObject *args)
{
    (void)args;
    PyObject *r = dev_close(d, NULL);
    if (!r)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

static PyObject *dev_rank(DeviceObject *d, void *c) { (void)c; return device_ok(d) ? PyLong_FromLong(xdev_rank(d->dev)) : NULL; }
static PyObject *dev_size(DeviceObject *d, void *c) { (void)c; return device_ok(d) ? PyLong_FromLong(xdev_size(d->dev)) : NULL; }

static PyMethodDef dev_methods[] = {
    { "send", (PyCFunction)(void (*)(void))dev_send, METH_FASTCALL | METH_KEYWORDS, "send(buf, dest, tag=0, ctx=0)" },
    { "ssend", (PyCFunction)(void (*)(void))dev_ssend, METH_FASTCALL | METH_KEYWORDS, "ssend(buf, dest, tag=0, ctx=0): returns once matched" },
    { "recv", (PyCFunction)(void (*)(void))dev_recv, METH_FASTCALL | METH_KEYWORDS, "recv(buf, source=ANY_SOURCE, tag=ANY_TAG, ctx=0) -> Status" },
    { "isend", (PyCFunction)(void (*)(void))dev_isend, METH_FASTCALL | METH_KEYWORDS, "isend(buf, dest, tag=0, ctx=0) -> Request" },
    { "issend", (PyCFunction)(void (*)(void))dev_issend, METH_FASTCALL | METH_KEYWORDS, "issend(buf, dest, tag=0, ctx=0) -> Request" },
    { "irecv", (PyCFunction)(void (*)(void))dev_irecv, METH_FASTCALL | METH_KEYWORDS, "irecv(buf, source=ANY_SOURCE, tag=ANY_TAG, ctx=0) -> Request" },
    { "iprobe", (PyCFunction)(void (*)(void))dev_iprobe, METH_FASTCALL | METH_KEYWORDS, "iprobe(source, tag, ctx) -> Status or None" },
    { "probe", (PyCFunction)(void (*)(void))dev_probe, METH_FASTCALL | METH_KEYWORDS, "probe(source, tag, ctx) -> Status" },
    { "improbe", (PyCFunction)(void (*)(void))dev_improbe, METH_FASTCALL | METH_KEYWORDS, "improbe(source, tag, ctx) -> Message or None" },
    { "mprobe", (PyCFunction)(void (*)(void))dev_mprobe, METH_FASTCALL | METH_KEYWORDS, "mprobe(source, tag, ctx) -> Message" },
    { "send_obj", (PyCFunction)(void (*)(void))dev_send_obj, METH_FASTCALL | METH_KEYWORDS, "send_obj(obj, dest, tag=0, ctx=0): send any picklable object (pickle protocol 5)" },
    { "recv_obj", (PyCFunction)(void (*)(void))dev_recv_obj, METH_FASTCALL | METH_KEYWORDS, "recv_obj(source, tag, ctx) -> (obj, Status): receive what send_obj sent" },
    { "recv_bytes", (PyCFunction)(void (*)(void))dev_recv_bytes, METH_FASTCALL | METH_KEYWORDS, "recv_bytes(source, tag, ctx) -> (bytes, Status): a whole message of any length" },
    { "peek", (PyCFunction)dev_peek, METH_VARARGS, "peek(timeout_ms=-1) -> the completed Request, or None" },
    { "wakeup", (PyCFunction)dev_wakeup, METH_NOARGS, "make every call blocked in the device raise Error (ERR_WOKEN)" },
    { "progress", (PyCFunction)dev_progress, METH_NOARGS, "drive transfers once; True if anything moved" },
    { "fileno", (PyCFunction)dev_fileno, METH_NOARGS, "the fd to poll (xdev_fd)" },
    { "arm", (PyCFunction)dev_arm, METH_NOARGS, "True if sleeping on fileno() is safe now" },
    { "peer_state", (PyCFunction)dev_peer_state, METH_VARARGS, "PEER_UNKNOWN, PEER_ALIVE or PEER_DEAD" },
    { "stats", (PyCFunction)dev_stats, METH_NOARGS, "counters (xdev_stats) as a dict" },
    { "close", (PyCFunction)dev_close, METH_NOARGS, "wake the calls blocked in other threads, wait for them, finalize" },
    { "__enter__", dev_enter, METH_NOARGS, NULL },
    { "__exit__", (PyCFunction)dev_exit, METH_VARARGS, NULL },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef dev_getset[] = {
    { "rank", (getter)dev_rank, NULL, "this process's rank", NULL },
    { "size", (getter)dev_size, NULL, "ranks in the job", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject DeviceType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "xdev.Device",
    .tp_basicsize = sizeof(DeviceObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Device(*, options=None): this rank's endpoint in the job its launcher started.\n"
              "options: {name: value} of transport options (XDEV_SHM_RING, ...), over the "
              "environment's.",
    .tp_new = dev_new,
    .tp_init = (initproc)dev_init,
    .tp_dealloc = (destructor)dev_dealloc,
    .tp_traverse = (traverseproc)dev_traverse,
    .tp_methods = dev_methods,
    .tp_getset = dev_getset,
};

/* ---- requests ---- */

/* wait() -> Status; raises for an operation that failed (the Status rides
 * on the exception). Reaps the request. */
static PyObject *req_wait(RequestObject *r, PyObject *unused)
{
    (void)unused;
    if (!r->active)
        return PyErr_Format(PyExc_ValueError, "xdev: the request was already reaped");
    if (!device_ok(r->device))
        return NULL;
    xdev_status_t st;
    int rc = wait_request(r->device, r->req, &st, false);
    if (rc == XDEV_ERR_WOKEN) /* still active: wait again, test or cancel */
        return raise_code(rc, NULL);
    if (rc == INTERRUPTED_ACTIVE)
        return NULL; /* what the signal handler raised; still active */
    request_reaped(r); /* reaped (or not ours to reap: another thread's) */
    if (rc == 1)
        return NULL;
    if (rc < 0)
        return raise_code(rc, NULL);
    return st.error != XDEV_OK ? raise_code(st.error, &st) : status_new(&st);
}

/* test() -> Status once complete (reaping it), else None. */
static PyObject *req_test(RequestObject *r, PyObject *unused)
{
    (void)unused;
    if (!r->active)
        return PyErr_Format(PyExc_ValueError, "xdev: the request was already reaped");
    if (!device_ok(r->device))
        return NULL;
    xdev_status_t st;
    int done = 0, rc = xdev_test(r->req, &done, &st);
    if (rc != XDEV_OK)
        return raise_code(rc, NULL);
    if (!done)
        Py_RETURN_NONE;
    request_reaped(r);
    return st.error != XDEV_OK ? raise_code(st.error, &st) : status_new(&st);
}

/* cancel() -> True if cancelled, False if too late (it completes whole). */
static PyObject *req_cancel(RequestObject *r, PyObject *unused)
{
    (void)unused;
    if (!r->active)
        return PyErr_Format(PyExc_ValueError, "xdev: the request was already reaped");
    int rc = xdev_cancel(r->req);
    if (rc == XDEV_OK || rc == XDEV_ERR_TOO_LATE)
        return PyBool_FromLong(rc == XDEV_OK);
    return raise_code(rc, NULL);
}

static PyObject *req_active(RequestObject *r, void *c)
{
    (void)c;
    return PyBool_FromLong(r->active);
}

static PyObject *req_device(RequestObject *r, void *c)
{
    (void)c;
    return Py_NewRef((PyObject *)r->device);
}

/* Only a reaped request (or one its device abandoned) gets here: the
 * device's live set holds every active one. */
static void req_dealloc(RequestObject *r)
{
    if (r->has_view)
        PyBuffer_Release(&r->view);
    Py_XDECREF(r->keep);
    PyMem_RawFree(r->req);
    Py_XDECREF(r->device);
    PyObject_Free(r);
}

/* `await req`: the device's wait_async (xdev/__init__.py) does the work. */
static PyObject *req_await(RequestObject *r)
{
    PyObject *coro = PyObject_CallMethod((PyObject *)r->device, "wait_async", "O", (PyObject *)r);
    if (!coro)
        return NULL;
    PyObject *it = PyObject_CallMethod(coro, "__await__", NULL);
    Py_DECREF(coro);
    return it;
}

static PyAsyncMethods req_async = { .am_await = (unaryfunc)req_await };

static PyMethodDef req_methods[] = {
    { "wait", (PyCFunction)req_wait, METH_NOARGS, "block until complete; Status" },
    { "test", (PyCFunction)req_test, METH_NOARGS, "Status if complete, else None" },
    { "cancel", (PyCFunction)req_cancel, METH_NOARGS, "cancel if not begun" },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef req_getset[] = {
    { "active", (getter)req_active, NULL, "not yet reaped", NULL },
    { "device", (getter)req_device, NULL, "its device", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject RequestType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "xdev.Request",
    .tp_basicsize = sizeof(RequestObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A nonblocking operation; wait() or test() reaps it.",
    .tp_dealloc = (destructor)req_dealloc,
    .tp_as_async = &req_async,
    .tp_methods = req_methods,
    .tp_getset = req_getset,
};

/* ---- messages (matched probe) ---- */

static PyObject *msg_irecv(MessageObject *m, PyObject *args)
{
    PyObject *buf;
    if (!PyArg_ParseTuple(args, "O", &buf) || !device_ok(m->device))
        return NULL;
    if (m->used)
        return PyErr_Format(PyExc_ValueError, "xdev: the message was already received");
    RequestObject *r = request_new(m->device);
    if (!r)
        return NULL;
    if (get_buffer(buf, &r->view, true) < 0) {
        Py_DECREF(r);
        return NULL;
    }
    r->has_view = true;
    int rc = xdev_imrecv(m->device->dev, r->view.buf, (size_t)r->view.len, &m->msg, r->req);
    if (rc != XDEV_OK) {
        Py_DECREF(r);
        return raise_code(rc, NULL);
    }
    m->used = true;
    return request_posted(r);
}

static PyObject *msg_recv(MessageObject *m, PyObject *args)
{
    PyObject *buf;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "O", &buf) || !device_ok(m->device))
        return NULL;
    if (m->used)
        return PyErr_Format(PyExc_ValueError, "xdev: the message was already received");
    if (get_buffer(buf, &view, true) < 0)
        return NULL;
    xdev_request_t req = { .user = NULL };
    xdev_status_t st;
    int rc = xdev_imrecv(m->device->dev, view.buf, (size_t)view.len, &m->msg, &req);
    if (rc == XDEV_OK) {
        m->used = true;
        rc = wait_request(m->device, &req, &st, true);
    }
    PyBuffer_Release(&view);
    return outcome(rc, &st, true);
}

static PyObject *msg_status(MessageObject *m, void *c)
{
    (void)c;
    return status_new(&m->st);
}

static void msg_dealloc(MessageObject *m)
{
    /* An unreceived claimed message stays claimed until finalize: xdev
     * has no "unclaim", and giving it to another receive would reorder. */
    Py_XDECREF(m->device);
    PyObject_Free(m);
}

static PyMethodDef msg_methods[] = {
    { "recv", (PyCFunction)msg_recv, METH_VARARGS, "recv(buf) -> Status" },
    { "irecv", (PyCFunction)msg_irecv, METH_VARARGS, "irecv(buf) -> Request" },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef msg_getset[] = {
    { "status", (getter)msg_status, NULL, "source, tag, ctx and length", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject MessageType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "xdev.Message",
    .tp_basicsize = sizeof(MessageObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A message claimed by a matched probe: only its own recv takes it.",
    .tp_dealloc = (destructor)msg_dealloc,
    .tp_methods = msg_methods,
    .tp_getset = msg_getset,
};

/* ---- the module ---- */

static PyStructSequence_Field status_fields[] = {
    { "source", "sender's rank" }, { "tag", NULL }, { "ctx", NULL },
    { "count", "bytes delivered" }, { "msg_len", "the message's full length" },
    { "error", "XDEV_OK or an XDEV_ERR code" }, { NULL, NULL },
};

static PyStructSequence_Desc status_desc = { "xdev.Status", "What a completed operation reports.",
                                             status_fields, 6 };

static PyObject *mod_version(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    return PyUnicode_FromString(xdev_version());
}

static PyMethodDef mod_methods[] = {
    { "version", mod_version, METH_NOARGS, "the library's version" },
    { NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = { PyModuleDef_HEAD_INIT, "_xdev", NULL, -1, mod_methods,
                                     NULL, NULL, NULL, NULL };

PyMODINIT_FUNC PyInit__xdev(void)
{
    if (PyType_Ready(&DeviceType) < 0 || PyType_Ready(&RequestType) < 0 ||
        PyType_Ready(&MessageType) < 0 || PyStructSequence_InitType2(&StatusType, &status_desc) < 0)
        return NULL;
    PyObject *pickle = PyImport_ImportModule("pickle");
    if (!pickle)
        return NULL;
    pickle_dumps = PyObject_GetAttrString(pickle, "dumps");
    pickle_loads = PyObject_GetAttrString(pickle, "loads");
    pickle_protocol = PyLong_FromLong(5);
    Py_DECREF(pickle);
    if (!pickle_dumps || !pickle_loads || !pickle_protocol)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Error = PyErr_NewExceptionWithDoc("xdev.Error", "An xdev call failed: .code, .status.",
                                      NULL, NULL);
    TruncationError = PyErr_NewException("xdev.TruncationError", Error, NULL);
    PeerError = PyErr_NewException("xdev.PeerError", Error, NULL);
    if (!Error || !TruncationError || !PeerError ||
        PyModule_AddObjectRef(m, "Error", Error) < 0 ||
        PyModule_AddObjectRef(m, "TruncationError", TruncationError) < 0 ||
        PyModule_AddObjectRef(m, "PeerError", PeerError) < 0 ||
        PyModule_AddObjectRef(m, "Device", (PyObject *)&DeviceType) < 0 ||
        PyModule_AddObjectRef(m, "Request", (PyObject *)&RequestType) < 0 ||
        PyModule_AddObjectRef(m, "Message", (PyObject *)&MessageType) < 0 ||
        PyModule_AddObjectRef(m, "Status", (PyObject *)&StatusType) < 0 ||
        PyModule_AddIntConstant(m, "ANY_SOURCE", XDEV_ANY_SOURCE) < 0 ||
        PyModule_AddIntConstant(m, "ANY_TAG", XDEV_ANY_TAG) < 0 ||
        PyModule_AddIntConstant(m, "PEER_UNKNOWN", XDEV_PEER_UNKNOWN) < 0 ||
        PyModule_AddIntConstant(m, "PEER_ALIVE", XDEV_PEER_ALIVE) < 0 ||
        PyModule_AddIntConstant(m, "PEER_DEAD", XDEV_PEER_DEAD) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    /* Every code an Error can carry, under its C name without XDEV_. */
    static const struct {
        const char *name;
        int code;
    } codes[] = {
        { "ERR_ARG", XDEV_ERR_ARG },         { "ERR_NOMEM", XDEV_ERR_NOMEM },
        { "ERR_TRUNCATE", XDEV_ERR_TRUNCATE }, { "ERR_PEER", XDEV_ERR_PEER },
        { "ERR_CANCELED", XDEV_ERR_CANCELED }, { "ERR_INIT", XDEV_ERR_INIT },
        { "ERR_SYSTEM", XDEV_ERR_SYSTEM },   { "ERR_TOO_LATE", XDEV_ERR_TOO_LATE },
        { "ERR_TIMEOUT", XDEV_ERR_TIMEOUT }, { "ERR_WOKEN", XDEV_ERR_WOKEN },
        { "ERR_PEER_PENDING", XDEV_ERR_PEER_PENDING }, { "ERR_BUSY", XDEV_ERR_BUSY },
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        if (PyModule_AddIntConstant(m, codes[i].name, codes[i].code) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}

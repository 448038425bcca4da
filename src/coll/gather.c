/*
 * gather.c - gather(v) and scatter(v): binomial trees for short blocks
 * (log p steps; inner members forward their subtree's blocks, in relative
 * rank order), and for long blocks the linear form, in which the root posts
 * every transfer at once so they all overlap. The v forms are linear.
 */

#include "coll.h"

enum { PH_TREE, PH_LINEAR };

/* Members in the subtree of relative rank vr (vr itself included). */
static int subtree_size(int vr, int p)
{
    int m;
    if (vr == 0) return p;
    m = vr & -vr;
    return vr + m < p ? m : p - vr;
}

/* Blocks arrive in relative order; at a root other than 0 they are put in
 * group order afterwards. */
int coll_gather_binomial(xdev_coll_group_t *g, const void *sbuf, size_t len, void *rbuf,
                         int root, int phase)
{
    int p = g->size, vr = coll_rel(g, root), rc;
    int n = subtree_size(vr, p);
    char *tmp = NULL;
    int direct = vr == 0 && root == 0; /* relative order is group order */
    if (direct) tmp = rbuf;
    else if (n > 1 || vr == 0) {
        if (!(tmp = coll_alloc(g, (size_t)n * len))) return XDEV_ERR_NOMEM;
    }
    if (tmp) coll_copy(tmp, sbuf, len);
    /* Every child's subtree lands at its own offset: post them together. */
    for (int mask = 1; mask < p && !(vr & mask); mask <<= 1) {
        int c = vr + mask;
        if (c >= p) break;
        rc = coll_irecv(g, coll_at(tmp, (size_t)mask * len), (size_t)subtree_size(c, p) * len,
                        coll_abs(g, c, root), phase);
        if (rc) goto out;
    }
    if ((rc = coll_waitall(g))) goto out;
    if (vr != 0) {
        int parent = coll_abs(g, vr - (vr & -vr), root);
        rc = coll_isend(g, tmp ? tmp : sbuf, (size_t)n * len, parent, phase);
        if (!rc) rc = coll_waitall(g);
    } else if (!direct) {
        for (int i = 0; i < p; i++)
            coll_copy(coll_at(rbuf, (size_t)coll_abs(g, i, root) * len),
                      coll_at(tmp, (size_t)i * len), len);
    }
out:
    if (!direct) coll_free(g, tmp);
    return rc;
}

static int gatherv_linear(xdev_coll_group_t *g, const void *sbuf, size_t len, void *rbuf,
                          const size_t *counts, const size_t *displs, int root)
{
    int rc = XDEV_OK;
    if (g->rank != root) {
        rc = coll_isend(g, sbuf, len, root, PH_LINEAR);
        return rc ? rc : coll_waitall(g);
    }
    for (int i = 0; i < g->size && !rc; i++)
        if (i != root)
            rc = coll_irecv(g, coll_at(rbuf, coll_displ_of(displs, len, i)),
                            coll_count_of(counts, len, i), i, PH_LINEAR);
    coll_copy_polling(g, coll_at(rbuf, coll_displ_of(displs, len, root)), sbuf, len);
    return rc ? rc : coll_waitall(g);
}

int xdev_coll_gather(xdev_coll_group_t *g, const void *sbuf, size_t len, void *rbuf, int root)
{
    if (!g || !coll_buf_ok(sbuf, len) || !coll_root_ok(g, root)) return XDEV_ERR_ARG;
    int ok = 1;
    size_t total = coll_bytes(len, (size_t)g->size, &ok);
    if (!ok || (g->rank == root && !coll_buf_ok(rbuf, total))) return XDEV_ERR_ARG;
    int rc = coll_begin(g);
    if (rc) return rc;
    if (coll_pick(g, F_GATHER, len, 1) == GATHER_LINEAR)
        rc = gatherv_linear(g, sbuf, len, rbuf, NULL, NULL, root);
    else
        rc = coll_gather_binomial(g, sbuf, len, rbuf, root, PH_TREE);
    return coll_end(g, rc);
}

/* Root-only checks of counts/displs: present, and every block addressable. */
static int v_args_ok(const xdev_coll_group_t *g, const void *buf, const size_t *counts,
                     const size_t *displs, int root)
{
    if (g->rank != root) return 1;
    if (!counts || !displs) return 0;
    for (int i = 0; i < g->size; i++) {
        if (!coll_buf_ok(buf, counts[i])) return 0;
        if (counts[i] && displs[i] > SIZE_MAX - counts[i]) return 0;
    }
    return 1;
}

int xdev_coll_gatherv(xdev_coll_group_t *g, const void *sbuf, size_t len, void *rbuf,
                      const size_t *counts, const size_t *displs, int root)
{
    if (!g || !coll_buf_ok(sbuf, len) || !coll_root_ok(g, root) ||
        !v_args_ok(g, rbuf, counts, displs, root))
        return XDEV_ERR_ARG;
    if (g->rank == root && counts[root] != len) return coll_mismatch(g);
    int rc = coll_begin(g);
    if (rc) return rc;
    return coll_end(g, gatherv_linear(g, sbuf, len, rbuf, counts, displs, root));
}

/* The mirror image of coll_gather_binomial. */
static int scatter_binomial(xdev_coll_group_t *g, const void *sbuf, void *rbuf, size_t len,
                            int root)
{
    int p = g->size, vr = coll_rel(g, root), rc = XDEV_OK;
    int n = subtree_size(vr, p);
    const char *src = NULL; /* this member's subtree blocks, relative order */
    char *tmp = NULL;
    if (vr == 0) {
        if (root == 0) src = sbuf;
        else {
            if (!(tmp = coll_alloc(g, (size_t)p * len))) return XDEV_ERR_NOMEM;
            for (int i = 0; i < p; i++)
                coll_copy(coll_at(tmp, (size_t)i * len),
                          coll_cat(sbuf, (size_t)coll_abs(g, i, root) * len), len);
            src = tmp;
        }
    } else {
        char *into = rbuf;
        if (n > 1 && !(into = tmp = coll_alloc(g, (size_t)n * len))) return XDEV_ERR_NOMEM;
        rc = coll_irecv(g, into, (size_t)n * len, coll_abs(g, vr - (vr & -vr), root), PH_TREE);
        if (!rc) rc = coll_waitall(g);
        src = into;
    }
    int mask = 1;
    while (mask < p && !(vr & mask)) mask <<= 1;
    for (mask >>= 1; !rc && mask > 0; mask >>= 1) {
        int c = vr + mask;
        if (c < p)
            rc = coll_isend(g, coll_cat(src, (size_t)mask * len), (size_t)subtree_size(c, p) * len,
                            coll_abs(g, c, root), PH_TREE);
    }
    if (!rc) rc = coll_waitall(g);
    if (!rc && src != rbuf) coll_copy(rbuf, src, len);
    coll_free(g, tmp);
    return rc;
}

static int scatterv_linear(xdev_coll_group_t *g, const void *sbuf, const size_t *counts,
                           const size_t *displs, void *rbuf, size_t len, int root)
{
    int rc = XDEV_OK;
    if (g->rank != root) {
        rc = coll_irecv(g, rbuf, len, root, PH_LINEAR);
        return rc ? rc : coll_waitall(g);
    }
    for (int i = 0; i < g->size && !rc; i++)
        if (i != root)
            rc = coll_isend(g, coll_cat(sbuf, coll_displ_of(displs, len, i)),
                            coll_count_of(counts, len, i), i, PH_LINEAR);
    coll_copy(rbuf, coll_cat(sbuf, coll_displ_of(displs, len, root)), len);
    return rc ? rc : coll_waitall(g);
}

int xdev_coll_scatter(xdev_coll_group_t *g, const void *sbuf, void *rbuf, size_t len, int root)
{
    if (!g || !coll_buf_ok(rbuf, len) || !coll_root_ok(g, root)) return XDEV_ERR_ARG;
    int ok = 1;
    size_t total = coll_bytes(len, (size_t)g->size, &ok);
    if (!ok || (g->rank == root && !coll_buf_ok(sbuf, total))) return XDEV_ERR_ARG;
    int rc = coll_begin(g);
    if (rc) return rc;
    if (coll_pick(g, F_SCATTER, len, 1) == SCATTER_LINEAR)
        rc = scatterv_linear(g, sbuf, NULL, NULL, rbuf, len, root);
    else
        rc = scatter_binomial(g, sbuf, rbuf, len, root);
    return coll_end(g, rc);
}

int xdev_coll_scatterv(xdev_coll_group_t *g, const void *sbuf, const size_t *counts,
                       const size_t *displs, void *rbuf, size_t len, int root)
{
    if (!g || !coll_buf_ok(rbuf, len) || !coll_root_ok(g, root) ||
        !v_args_ok(g, sbuf, counts, displs, root))
        return XDEV_ERR_ARG;
    if (g->rank == root && counts[root] != len) return coll_mismatch(g);
    int rc = coll_begin(g);
    if (rc) return rc;
    return coll_end(g, scatterv_linear(g, sbuf, counts, displs, rbuf, len, root));
}

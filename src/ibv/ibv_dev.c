/*
 * ibv_dev.c - which device, port and GID this rank uses.
 *
 * XDEV_IBV_DEVICE names the device (default: the first with an active
 * port), XDEV_IBV_PORT the port (default: its first active one) and
 * XDEV_IBV_GID_INDEX the GID (default below). On InfiniBand the LID
 * addresses a peer and no GRH is needed; on RoCE only the GID does, and
 * the default is a RoCE v2 GID holding an IPv4 address (routable, the one
 * every RoCE v2 fabric configures), else any RoCE v2 GID, else the first
 * non-zero one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ibv.h"

static bool gid_is_zero(const union ibv_gid *g)
{
    static const union ibv_gid zero;
    return !memcmp(g, &zero, sizeof zero);
}

static bool gid_is_ipv4(const union ibv_gid *g)
{
    static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    return !memcmp(g->raw, mapped, sizeof mapped);
}

static int gid_rank(struct ibv_context *ctx, uint8_t port, int i, union ibv_gid *gid)
{
    struct ibv_gid_entry e;
    if (ibv_query_gid_ex(ctx, port, (uint32_t)i, &e, 0) != 0 || gid_is_zero(&e.gid))
        return 0;
    *gid = e.gid;
    if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
        return 1;
    return gid_is_ipv4(&e.gid) ? 3 : 2;
}

static int choose_gid(const xdev_t *dev, ibv_device_choice_t *d, const struct ibv_port_attr *pa)
{
    size_t i = SIZE_MAX;
    if (xdev_opt_size(dev, "XDEV_IBV_GID_INDEX", &i) != XDEV_OK)
        return XDEV_ERR_INIT;
    if (i != SIZE_MAX) {
        if (i >= (size_t)pa->gid_tbl_len || ibv_query_gid(d->ctx, d->port, (int)i, &d->gid))
            return XDEV_ERR_INIT;
        d->gid_index = (int)i;
        return XDEV_OK;
    }
    if (!d->roce) {
        d->gid_index = 0; /* the subnet-local GID, used only across subnets */
        return ibv_query_gid(d->ctx, d->port, 0, &d->gid) ? XDEV_ERR_INIT : XDEV_OK;
    }
    int best = -1, best_rank = 0;
    for (int i = 0; i < pa->gid_tbl_len; i++) {
        union ibv_gid g;
        int r = gid_rank(d->ctx, d->port, i, &g);
        if (r > best_rank) {
            best_rank = r;
            best = i;
            d->gid = g;
        }
    }
    if (best < 0)
        return XDEV_ERR_INIT;
    d->gid_index = best;
    return XDEV_OK;
}

/* Port `want` (0: the first active one) of ctx, if active. */
static int choose_port(ibv_device_choice_t *d, int want, struct ibv_port_attr *pa)
{
    for (int p = want ? want : 1; p <= d->attr.phys_port_cnt; p++) {
        if (ibv_query_port(d->ctx, (uint8_t)p, pa) == 0 && pa->state == IBV_PORT_ACTIVE) {
            d->port = (uint8_t)p;
            return XDEV_OK;
        }
        if (want)
            break;
    }
    return XDEV_ERR_INIT;
}

int ibv_dev_choose(const xdev_t *dev, ibv_device_choice_t *out)
{
    memset(out, 0, sizeof *out);
    const char *name = xdev_opt(dev, "XDEV_IBV_DEVICE");
    size_t want_port = 0; /* any */
    if (xdev_opt_size(dev, "XDEV_IBV_PORT", &want_port) != XDEV_OK)
        return XDEV_ERR_INIT;
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list)
        return XDEV_ERR_INIT;
    int rc = XDEV_ERR_INIT;
    for (int i = 0; i < n && rc != XDEV_OK; i++) {
        if (name && strcmp(ibv_get_device_name(list[i]), name))
            continue;
        ibv_device_choice_t d = { .ctx = ibv_open_device(list[i]) };
        struct ibv_port_attr pa;
        if (!d.ctx)
            continue;
        if (ibv_query_device(d.ctx, &d.attr) == 0 && choose_port(&d, (int)want_port, &pa) == XDEV_OK) {
            d.roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
            d.lid = pa.lid;
            d.mtu = pa.active_mtu;
            rc = choose_gid(dev, &d, &pa);
        }
        if (rc == XDEV_OK)
            *out = d;
        else
            ibv_close_device(d.ctx);
    }
    ibv_free_device_list(list);
    return rc;
}

/* xdev-info: every device and port, and the choice xdev would make. */
void ibv_info(FILE *out)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list || !n)
        fprintf(out, "  no RDMA device (is the rdma-core provider for it installed?)\n");
    for (int i = 0; list && i < n; i++) {
        struct ibv_context *ctx = ibv_open_device(list[i]);
        struct ibv_device_attr da;
        if (!ctx || ibv_query_device(ctx, &da) != 0) {
            fprintf(out, "  %s: cannot be opened\n", ibv_get_device_name(list[i]));
            if (ctx)
                ibv_close_device(ctx);
            continue;
        }
        fprintf(out, "  %s: firmware %s, %d port(s), max %d QPs\n", ibv_get_device_name(list[i]),
                da.fw_ver, da.phys_port_cnt, da.max_qp);
        for (int p = 1; p <= da.phys_port_cnt; p++) {
            struct ibv_port_attr pa;
            if (ibv_query_port(ctx, (uint8_t)p, &pa) != 0)
                continue;
            fprintf(out, "    port %d: %s, %s, MTU %d, %d GIDs\n", p, ibv_port_state_str(pa.state),
                    pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet (RoCE)" : "InfiniBand",
                    128 << pa.active_mtu, pa.gid_tbl_len);
        }
        ibv_close_device(ctx);
    }
    if (list)
        ibv_free_device_list(list);
    ibv_device_choice_t d;
    if (ibv_dev_choose(NULL, &d) == XDEV_OK) {
        fprintf(out, "  xdev would use %s port %d, GID index %d\n", ibv_get_device_name(d.ctx->device),
                d.port, d.gid_index);
        ibv_dev_release(&d);
    }
}

void ibv_dev_release(ibv_device_choice_t *d)
{
    if (d->ctx)
        ibv_close_device(d->ctx);
    d->ctx = NULL;
}

/*
 * ofi_fabric.c - choosing a provider and opening the libfabric objects.
 *
 * The provider is the first fi_getinfo offers for what we need (reliable
 * datagrams, FI_MSG, in-order sends, and FI_RMA when it has it), unless
 * XDEV_OFI_PROVIDER (or libfabric's own FI_PROVIDER) names one. Without
 * a name, a high-speed provider is preferred to the ones that only layer
 * over the host's sockets or shared memory, which xdev's own tcp and shm
 * transports already cover at least as well.
 *
 * Registration: we tell fi_getinfo which mr_mode bits we can honour
 * (FI_MR_LOCAL, FI_MR_ALLOCATED, FI_MR_PROV_KEY, FI_MR_VIRT_ADDR,
 * FI_MR_ENDPOINT) and register only what the chosen provider then asks for.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ofi.h"

#define OFI_API FI_VERSION(1, 9)
#define MR_MODES (FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ENDPOINT)
#define RMA_CAPS (FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

/* Core providers that only carry traffic over what xdev's own transports
 * already use: "tcp;ofi_rxm" is tcp underneath, "udp;ofi_rxd" udp. */
static const char *const slow_cores[] = { "tcp", "udp", "sockets", "shm", "net" };

bool ofi_verbose;

/* Why open failed, on stderr, only when XDEV_OFI_VERBOSE asks for it. */
void ofi_say(const char *fmt, ...)
{
    if (!ofi_verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("xdev ofi: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

const char *ofi_strerror(int rc)
{
    return ofi_lib_load() == XDEV_OK ? ofi_lib.strerror(rc < 0 ? -rc : rc) : "libfabric not loaded";
}

static bool core_is(const char *prov, const char *core)
{
    size_t n = strcspn(prov, ";");
    return strlen(core) == n && !strncmp(prov, core, n);
}

static bool is_fast(const struct fi_info *fi)
{
    const char *prov = fi->fabric_attr->prov_name;
    for (size_t i = 0; i < sizeof slow_cores / sizeof slow_cores[0]; i++)
        if (core_is(prov, slow_cores[i]))
            return false;
    return true;
}

/* prov: XDEV_OFI_PROVIDER, or NULL. NULL where libfabric is not loaded
 * or offers nothing. */
static struct fi_info *get_list(const char *prov, bool rma)
{
    if (ofi_lib_load() != XDEV_OK)
        return NULL;
    struct fi_info *hints = ofi_lib.dupinfo(NULL), *list = NULL;
    if (!hints)
        return NULL;
    hints->caps = FI_MSG | (rma ? RMA_CAPS : 0);
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    hints->domain_attr->mr_mode = MR_MODES;
    hints->domain_attr->threading = FI_THREAD_DOMAIN; /* the device lock serialises us */
    if (prov)
        hints->fabric_attr->prov_name = strdup(prov);
    if (ofi_lib.getinfo(OFI_API, NULL, NULL, 0, hints, &list) != 0)
        list = NULL;
    ofi_lib.freeinfo(hints);
    return list;
}

/* Named provider: the first offer. Otherwise a fast one if there is any.
 * Offers that cannot gather a frame header and a payload are skipped. */
static const struct fi_info *pick(const char *prov, const struct fi_info *list)
{
    bool named = prov || getenv("FI_PROVIDER");
    const struct fi_info *first = NULL;
    for (const struct fi_info *fi = list; fi; fi = fi->next) {
        if (fi->tx_attr->iov_limit < 2)
            continue;
        if (named || is_fast(fi))
            return fi;
        if (!first)
            first = fi;
    }
    return first;
}

static bool same_place(const struct fi_info *a, const struct fi_info *b)
{
    return !strcmp(a->fabric_attr->prov_name, b->fabric_attr->prov_name) &&
           !strcmp(a->fabric_attr->name, b->fabric_attr->name) &&
           !strcmp(a->domain_attr->name, b->domain_attr->name);
}

/* xdev-info: what libfabric offers for xdev's needs, and what xdev picks. */
void ofi_info(FILE *out)
{
    const char *prov = xdev_opt(NULL, "XDEV_OFI_PROVIDER");
    struct fi_info *list = get_list(prov, true);
    if (!list)
        list = get_list(prov, false);
    const struct fi_info *chosen = pick(prov, list);
    if (!list)
        fprintf(out, "  no provider offers reliable datagrams with FI_MSG here\n");
    for (const struct fi_info *fi = list; fi; fi = fi->next) {
        const struct fi_info *seen = list; /* offers repeat per API version */
        while (seen != fi && !same_place(seen, fi))
            seen = seen->next;
        if (seen != fi)
            continue;
        fprintf(out, "  %s %-16s fabric %s, domain %s%s%s\n",
                chosen && same_place(fi, chosen) ? "*" : " ",
                fi->fabric_attr->prov_name, fi->fabric_attr->name, fi->domain_attr->name,
                (fi->caps & RMA_CAPS) == RMA_CAPS ? ", RMA" : "",
                is_fast(fi) ? ", fast network" : "");
    }
    if (chosen)
        fprintf(out, "  (* the one xdev would use)\n");
    if (list)
        ofi_lib.freeinfo(list);
}

/* XDEV_OFI_RMA's choices, in order. */
enum { RMA_READ, RMA_WRITE, RMA_OFF };

bool ofi_fast_network(const xdev_t *dev)
{
    struct fi_info *list = get_list(xdev_opt(dev, "XDEV_OFI_PROVIDER"), false);
    bool fast = false;
    for (const struct fi_info *fi = list; fi && !fast; fi = fi->next)
        fast = is_fast(fi) && fi->tx_attr->iov_limit >= 2;
    if (list)
        ofi_lib.freeinfo(list);
    return fast;
}

static int rma_mode_of(const struct fi_info *fi, int wanted)
{
    if (wanted == RMA_OFF || (fi->caps & RMA_CAPS) != RMA_CAPS ||
        fi->domain_attr->mr_key_size > 8 || (fi->domain_attr->mr_mode & FI_MR_RAW))
        return XDEV_RNDZ_SEND;
    return wanted == RMA_WRITE ? XDEV_RNDZ_WRITE : XDEV_RNDZ_READ;
}

static int open_cq(xdev_tp_t *tp, size_t size)
{
    struct fi_cq_attr attr = {
        .size = size,
        .format = FI_CQ_FORMAT_MSG,
        .wait_obj = FI_WAIT_FD,
    };
    tp->wait_fd = -1;
    if (fi_cq_open(tp->domain, &attr, &tp->cq, NULL) == 0) {
        if (fi_control(&tp->cq->fid, FI_GETWAIT, &tp->wait_fd) != 0)
            tp->wait_fd = -1;
        return XDEV_OK;
    }
    attr.wait_obj = FI_WAIT_NONE;
    return fi_cq_open(tp->domain, &attr, &tp->cq, NULL) == 0 ? XDEV_OK : XDEV_ERR_INIT;
}

/* The shm provider names its region after the pid unless told otherwise,
 * so a rank killed with SIGKILL leaves a region behind that breaks the
 * endpoint of whichever later process gets the same pid. A name with the
 * job id never meets another job's leftovers, and xdevrun removes them. */
static int name_shm_region(xdev_tp_t *tp, const char *job_id)
{
    char name[160], what[32];
    snprintf(what, sizeof what, "-ofi%d", (int)getpid());
    int rc = xdev_job_name(tp->dev, job_id, tp->rank, what, name, sizeof name);
    return rc == XDEV_OK ? fi_setname(&tp->ep->fid, name, strlen(name) + 1) : -FI_EINVAL;
}

/* libfabric's shm provider completes a send above its inject size only
 * once the receiver has taken it, and it hands out send completions in the
 * order the sends were posted. A send to a rank that died therefore holds
 * back every later completion, to live ranks too (ofiwg/libfabric#9853,
 * open), and survivors stalled after a kill. A frame it can inject is
 * complete once posted, so over shm no frame is larger than that. RMA is
 * left as it is: with CMA the provider's fast path copies inside fi_read,
 * with no answer from the peer (the README's shm-provider limitation says
 * what is left). */
static size_t frame_limit(const struct fi_info *fi)
{
    size_t inject = fi->tx_attr->inject_size;
    if (core_is(fi->fabric_attr->prov_name, "shm") && inject > OFI_FIRST_HDR + XDEV_HEAD_MAX &&
        inject < OFI_BUF_BYTES)
        return inject;
    return OFI_BUF_BYTES;
}

static int open_fabric(xdev_tp_t *tp, const char *job_id)
{
    const char *prov = xdev_opt(tp->dev, "XDEV_OFI_PROVIDER");
    int rma = RMA_READ;
    if (xdev_opt_choice(tp->dev, "XDEV_OFI_RMA", &rma) != XDEV_OK)
        return XDEV_ERR_INIT;
    struct fi_info *list = rma != RMA_OFF ? get_list(prov, true) : NULL;
    if (!list || !pick(prov, list)) {
        if (list)
            ofi_lib.freeinfo(list);
        list = get_list(prov, false);
    }
    const struct fi_info *fi = list ? pick(prov, list) : NULL;
    tp->info = fi ? ofi_lib.dupinfo(fi) : NULL;
    if (list)
        ofi_lib.freeinfo(list);
    if (!tp->info) {
        ofi_say("fi_getinfo offers no provider with FI_EP_RDM, FI_MSG and FI_ORDER_SAS%s",
                prov ? " (XDEV_OFI_PROVIDER set)" : "");
        return XDEV_ERR_INIT;
    }
    fi = tp->info;
    tp->mr_mode = fi->domain_attr->mr_mode;
    tp->local_only = core_is(fi->fabric_attr->prov_name, "shm") ||
                     ((fi->caps & FI_LOCAL_COMM) && !(fi->caps & FI_REMOTE_COMM));
    tp->inject_max = fi->tx_attr->inject_size;
    tp->frame_max = frame_limit(fi);
    tp->rma_mode = rma_mode_of(fi, rma);
    tp->rma_max = fi->ep_attr->max_msg_size < XDEV_TP_PASS_BYTES ? fi->ep_attr->max_msg_size
                                                                  : XDEV_TP_PASS_BYTES;
    struct fi_av_attr av_attr = { .type = fi->domain_attr->av_type, .count = (size_t)tp->size };
    const char *step = "fi_fabric";
    int rc = ofi_lib.fabric(fi->fabric_attr, &tp->fabric, NULL);
    if (!rc && (step = "fi_domain"))
        rc = fi_domain(tp->fabric, tp->info, &tp->domain, NULL);
    if (!rc && (step = "fi_cq_open"))
        rc = open_cq(tp, tp->nrxbufs + tp->nctxs + 64) == XDEV_OK ? 0 : -FI_EINVAL;
    if (!rc && (step = "fi_av_open"))
        rc = fi_av_open(tp->domain, &av_attr, &tp->av, NULL);
    if (!rc && (step = "fi_endpoint"))
        rc = fi_endpoint(tp->domain, tp->info, &tp->ep, NULL);
    if (!rc && core_is(fi->fabric_attr->prov_name, "shm") && (step = "fi_setname"))
        rc = name_shm_region(tp, job_id);
    if (!rc && (step = "fi_ep_bind"))
        rc = fi_ep_bind(tp->ep, &tp->av->fid, 0);
    if (!rc)
        rc = fi_ep_bind(tp->ep, &tp->cq->fid, FI_TRANSMIT | FI_RECV);
    if (!rc && (step = "fi_enable"))
        rc = fi_enable(tp->ep);
    if (rc)
        ofi_say("%s on %s: %s", step, fi->fabric_attr->prov_name, ofi_strerror(rc));
    return rc ? XDEV_ERR_INIT : XDEV_OK;
}

/* The shm provider installs handlers of its own for SIGINT, SIGTERM,
 * SIGSEGV, SIGBUS and others as its endpoint opens (to unlink its region
 * before the process dies). A library must leave the application's
 * signals alone: a JVM lives on its SIGSEGV handler, Python on its SIGINT.
 * So whatever the provider changed is put back; its region is named after
 * the job (name_shm_region), which xdevrun removes however a rank ends. */
int ofi_fabric_open(xdev_tp_t *tp, const char *job_id)
{
    ofi_signals_t saved;
    ofi_signals_save(&saved);
    int rc = open_fabric(tp, job_id);
    ofi_signals_restore(&saved);
    return rc;
}

void ofi_fabric_close(xdev_tp_t *tp)
{
    if (tp->ep)
        fi_close(&tp->ep->fid);
    if (tp->rx_mr)
        fi_close(&tp->rx_mr->fid);
    if (tp->ctx_mr)
        fi_close(&tp->ctx_mr->fid);
    if (tp->av)
        fi_close(&tp->av->fid);
    if (tp->cq)
        fi_close(&tp->cq->fid);
    if (tp->domain)
        fi_close(&tp->domain->fid);
    if (tp->fabric)
        fi_close(&tp->fabric->fid);
    if (tp->info)
        ofi_lib.freeinfo(tp->info);
}

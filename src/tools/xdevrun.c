/*
 * xdevrun - run the ranks of an xdev job on this machine.
 *
 *   xdevrun -n N [--transport NAME] [--bind auto|core|none]
 *           [--timeout SECONDS] [--grace SECONDS] [--keep-going] prog [args...]
 *
 * Each rank is `prog args` with XDEV_RANK, XDEV_SIZE, XDEV_JOB_ID,
 * XDEV_JOB_SECRET, XDEV_BOOT_DIR (and XDEV_TRANSPORT if given) added to its
 * environment. The ranks share xdevrun's stdin/stdout/stderr. xdevrun tears
 * the job down when a rank fails (unless --keep-going), on timeout and on
 * a signal that would end it (INT, TERM, HUP, QUIT, USR1, USR2), with
 * whatever the ranks started (it is their
 * subreaper); once a failed job's ranks are gone, --keep-going or not,
 * what they left goes too. It always removes the job's boot directory and
 * shared-memory segments afterwards.
 *
 * Ranks are bound one to a CPU (of those xdevrun may use) when there are
 * no more ranks than CPUs, as MPI launchers do. Unbound, two busy-polling
 * ranks forked onto one CPU share it until the scheduler moves one, and a
 * message between them then waits for the other's time slice: a windowed
 * 8-byte stream here stalled 415 us per window over its first 40 windows.
 * Oversubscribed, binding would only stop the scheduler from balancing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "options.h"

#define MAX_RANKS 4096
#define EXIT_LAUNCH 1   /* xdevrun itself could not set the job up */
#define EXIT_USAGE 2
#define EXIT_TIMEOUT 124
#define EXIT_NOEXEC 127
#define SWEEP_NS 10000000L /* between looks for what a failed job left */
#define MAX_WAIT 3600.0 /* longest single sleep; keeps timespecs in range */

enum bind { BIND_AUTO, BIND_CORE, BIND_NONE };

struct options {
    int nranks;
    const char *transport; /* NULL: leave XDEV_TRANSPORT as inherited */
    enum bind bind;
    double timeout;        /* seconds, 0 = none */
    double grace;          /* seconds between failure, SIGTERM and SIGKILL */
    bool keep_going;
    char **argv;           /* the program and its arguments */
};

/* How far the teardown has gone; a job only ever moves down this list. */
enum phase {
    RUNNING,     /* nothing has gone wrong */
    GRACE,       /* a rank failed; the others may still exit on their own */
    TERMINATING, /* SIGTERM (or a forwarded signal) sent; SIGKILL is next */
    KILLED,      /* SIGKILL sent; only reaping is left */
};

struct job {
    const struct options *opt;
    pid_t *pids;       /* by rank; 0 once reaped or if never started */
    int live;          /* ranks started and not yet reaped */
    enum phase phase;
    double deadline;   /* end of GRACE or TERMINATING (monotonic seconds) */
    double timeout_at; /* INFINITY without a timeout */
    bool failed;
    int status;        /* xdevrun's exit status, fixed by the first failure */
    pid_t *kept;       /* our children from before the ranks: not the job's */
    int nkept;
};

/* Print one "xdevrun: ..." line with a single write(2), so that it cannot
 * interleave with output of the ranks, which share our stderr. */
static void say(const char *fmt, ...)
{
    char line[512] = "xdevrun: ";
    size_t len = strlen(line);
    size_t room = sizeof line - len - 1; /* keep a byte for the newline */
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(line + len, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        len += (size_t)n < room ? (size_t)n : room - 1;
    line[len++] = '\n';
    if (write(STDERR_FILENO, line, len) < 0) {
        /* stderr is gone: there is nowhere left to report anything */
    }
}

static _Noreturn void usage(FILE *out, int status)
{
    fputs("usage: xdevrun -n N [--transport NAME] [--bind auto|core|none]\n"
          "               [--timeout SECONDS] [--grace SECONDS] [--keep-going]\n"
          "               prog [args...]\n"
          "  -n N              number of ranks, 1..4096\n"
          "  --transport NAME  set XDEV_TRANSPORT=NAME for the ranks\n"
          "                    (auto, shm, tcp, ofi or ibv)\n"
          "  --bind core       bind rank i to the i-th CPU xdevrun may use\n"
          "                    (round robin when there are more ranks)\n"
          "  --bind none       leave the ranks to the scheduler\n"
          "  --bind auto       core when there are no more ranks than\n"
          "                    CPUs, else none (the default)\n"
          "  --timeout S       kill the job after S seconds (default:\n"
          "                    $XDEV_TIMEOUT, or none; 0 means none)\n"
          "  --grace S         wait S seconds after a failure before SIGTERM,\n"
          "                    and again before SIGKILL (default 2)\n"
          "  --keep-going      let the other ranks finish when one fails\n"
          "                    (what the ranks left running still goes)\n",
          out);
    exit(status);
}

static _Noreturn void bad_value(const char *what, const char *value)
{
    say("invalid %s '%s'", what, value);
    usage(stderr, EXIT_USAGE);
}

/* One of XDEV_TRANSPORT's words in the variable table, so that a typo is
 * a usage error here rather than every rank's failed xdev_init. */
static bool transport_named(const char *name)
{
    static const char var[] = "XDEV_TRANSPORT";
    return xdev_var_choice(xdev_var_find(var, sizeof var - 1), name) >= 0;
}

/* A non-negative, finite number of seconds; fractions allowed. */
static bool parse_seconds(const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !isfinite(v) || v < 0)
        return false;
    *out = v;
    return true;
}

static bool parse_nranks(const char *text, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < 1 || v > MAX_RANKS)
        return false;
    *out = (int)v;
    return true;
}

static void parse_options(int argc, char **argv, struct options *opt)
{
    static const struct option longopts[] = {
        {"transport", required_argument, NULL, 't'},
        {"bind", required_argument, NULL, 'b'},
        {"timeout", required_argument, NULL, 'T'},
        {"grace", required_argument, NULL, 'g'},
        {"keep-going", no_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *opt = (struct options){.grace = 2.0};

    /* The environment's timeout is only a default: --timeout overrides it. */
    const char *env_timeout = getenv("XDEV_TIMEOUT");
    if (env_timeout && *env_timeout && !parse_seconds(env_timeout, &opt->timeout))
        bad_value("XDEV_TIMEOUT", env_timeout);

    int c;
    /* '+' stops at the program name, leaving the program's options alone. */
    while ((c = getopt_long(argc, argv, "+n:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (!parse_nranks(optarg, &opt->nranks))
                bad_value("number of ranks", optarg);
            break;
        case 't':
            if (!transport_named(optarg))
                bad_value("transport", optarg);
            opt->transport = optarg;
            break;
        case 'b':
            if (!strcmp(optarg, "auto"))
                opt->bind = BIND_AUTO;
            else if (!strcmp(optarg, "core"))
                opt->bind = BIND_CORE;
            else if (!strcmp(optarg, "none"))
                opt->bind = BIND_NONE;
            else
                bad_value("binding", optarg);
            break;
        case 'T':
            if (!parse_seconds(optarg, &opt->timeout))
                bad_value("timeout", optarg);
            break;
        case 'g':
            if (!parse_seconds(optarg, &opt->grace))
                bad_value("grace period", optarg);
            break;
        case 'k':
            opt->keep_going = true;
            break;
        case 'h':
            usage(stdout, 0);
        default: /* getopt has already said what was wrong */
            usage(stderr, EXIT_USAGE);
        }
    }
    if (opt->nranks == 0) {
        say("missing -n N");
        usage(stderr, EXIT_USAGE);
    }
    if (optind == argc) {
        say("no program to run");
        usage(stderr, EXIT_USAGE);
    }
    opt->argv = argv + optind;
}

/* Write 2 * nbytes (at most 64) random hex digits and a NUL to hex. */
static int random_hex(char *hex, size_t nbytes)
{
    unsigned char raw[32];
    size_t got = 0;

    while (got < nbytes) {
        ssize_t n = getrandom(raw + got, nbytes - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            say("getrandom: %s", strerror(errno));
            return -1;
        }
        got += (size_t)n;
    }
    for (size_t i = 0; i < nbytes; i++)
        sprintf(hex + 2 * i, "%02x", raw[i]);
    return 0;
}

/* "<pid>-<8 hex>": the fixed-length random part means one job's id is never
 * a prefix of another's, which the /dev/shm cleanup relies on. */
static int make_job_id(char *id, size_t size)
{
    char hex[9];
    if (random_hex(hex, 4) < 0)
        return -1;
    snprintf(id, size, "%ld-%s", (long)getpid(), hex);
    return 0;
}

/* mkdtemp creates the directory with mode 0700: only our ranks can read or
 * plant the address files there. */
static int make_boot_dir(const char *job_id, char *dir, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    if (snprintf(dir, size, "%s/xdev-%s-XXXXXX", tmp, job_id) >= (int)size) {
        say("TMPDIR is too long: %s", tmp);
        return -1;
    }
    if (!mkdtemp(dir)) {
        say("cannot create a boot directory in %s: %s", tmp, strerror(errno));
        return -1;
    }
    return 0;
}

/* Everything but XDEV_RANK is the same for all ranks, so it is set once in
 * our own environment and inherited through fork and exec. */
static int export_job_env(const struct options *opt, const char *job_id,
                          const char *secret, const char *boot_dir)
{
    char size[16];
    snprintf(size, sizeof size, "%d", opt->nranks);
    if (setenv("XDEV_SIZE", size, 1) < 0 || setenv("XDEV_JOB_ID", job_id, 1) < 0 ||
        setenv("XDEV_JOB_SECRET", secret, 1) < 0 ||
        setenv("XDEV_BOOT_DIR", boot_dir, 1) < 0 ||
        (opt->transport && setenv("XDEV_TRANSPORT", opt->transport, 1) < 0)) {
        say("setenv: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* The CPUs the ranks are bound to, rank i to cpus[i % n]; n == 0 leaves
 * them unbound. */
struct binding {
    int cpus[CPU_SETSIZE];
    int n;
};

static void plan_binding(const struct options *opt, struct binding *b)
{
    cpu_set_t allowed;
    b->n = 0;
    if (opt->bind == BIND_NONE || sched_getaffinity(0, sizeof allowed, &allowed) < 0)
        return;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed))
            b->cpus[b->n++] = c;
    if (opt->bind == BIND_AUTO && opt->nranks > b->n)
        b->n = 0;
}

/* A rank that cannot be bound still runs: binding is about speed. */
static void bind_rank(const struct binding *b, int rank)
{
    if (!b->n)
        return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(b->cpus[rank % b->n], &one);
    if (sched_setaffinity(0, sizeof one, &one) < 0)
        say("rank %d: cannot bind to CPU %d: %s", rank, b->cpus[rank % b->n], strerror(errno));
}

/* In the forked child: become rank `rank` and exec the program. */
static _Noreturn void exec_rank(const struct options *opt, const struct binding *b, int rank,
                                pid_t launcher, const sigset_t *orig_mask)
{
    /* Ranks must not outlive xdevrun, even if it is SIGKILLed: they would
     * wait forever for peers. If xdevrun died before the prctl, the parent
     * has already changed and no death signal will come, so give up now. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != launcher)
        _exit(EXIT_LAUNCH);

    char value[16];
    snprintf(value, sizeof value, "%d", rank);
    if (setenv("XDEV_RANK", value, 1) < 0)
        _exit(EXIT_LAUNCH);
    bind_rank(b, rank);
    /* The signal mask survives exec; the program must get the one we had. */
    sigprocmask(SIG_SETMASK, orig_mask, NULL);
    execvp(opt->argv[0], opt->argv);
    say("rank %d: cannot run %s: %s", rank, opt->argv[0], strerror(errno));
    _exit(EXIT_NOEXEC);
}

/* Fork every rank; false if one could not be started. */
static bool start_ranks(struct job *job, const sigset_t *orig_mask)
{
    pid_t self = getpid();
    static struct binding b; /* large: not on the stack */
    plan_binding(job->opt, &b);

    for (int rank = 0; rank < job->opt->nranks; rank++) {
        pid_t pid = fork();
        if (pid < 0) {
            say("cannot start rank %d: %s", rank, strerror(errno));
            return false;
        }
        if (pid == 0)
            exec_rank(job->opt, &b, rank, self, orig_mask);
        job->pids[rank] = pid;
        job->live++;
    }
    return true;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The rank whose pid this is, or -1. */
static int rank_of(const struct job *job, pid_t pid)
{
    for (int rank = 0; rank < job->opt->nranks; rank++)
        if (job->pids[rank] == pid)
            return rank;
    return -1;
}

/* Calls fn(job, pid, arg) for each live child of ours and returns the sum
 * of what it returns. Children are found by the parent field of every
 * /proc/PID/stat: /proc/PID/task/TID/children needs CONFIG_PROC_CHILDREN,
 * which a kernel may lack. */
static int each_child(struct job *job, int (*fn)(struct job *, pid_t, int), int arg)
{
    DIR *dir = opendir("/proc");
    if (!dir)
        return 0;
    pid_t self = getpid();
    int sum = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        char *end, path[64], stat[1024];
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue; /* gone meanwhile */
        ssize_t len = read(fd, stat, sizeof stat - 1);
        close(fd);
        if (len <= 0)
            continue;
        stat[len] = '\0';
        /* "pid (comm) state ppid ...", where comm may hold anything,
         * parentheses and newlines included */
        char *after = strrchr(stat, ')'), state;
        long ppid;
        if (after && sscanf(after + 1, " %c %ld", &state, &ppid) == 2 && ppid == self &&
            state != 'Z')
            sum += fn(job, (pid_t)pid, arg);
    }
    closedir(dir);
    return sum;
}

/* A child we had before the ranks (`helper & exec xdevrun ...` leaves
 * one) is not the job's: no teardown touches it. */
static int keep_child(struct job *job, pid_t pid, int unused)
{
    (void)unused;
    pid_t *kept = realloc(job->kept, sizeof *kept * (size_t)(job->nkept + 1));
    if (!kept)
        return 0;
    job->kept = kept;
    kept[job->nkept++] = pid;
    return 1;
}

/* Signal (or with sig 0, count) a child that is what a rank left behind:
 * a wrapper's program once SIGTERM ended the wrapper, a process it put in
 * the background. As their subreaper we get them instead of init. */
static int signal_adopted(struct job *job, pid_t pid, int sig)
{
    if (rank_of(job, pid) >= 0)
        return 0;
    for (int i = 0; i < job->nkept; i++)
        if (job->kept[i] == pid)
            return 0;
    return kill(pid, sig) == 0;
}

static void signal_ranks(struct job *job, int sig)
{
    for (int rank = 0; rank < job->opt->nranks; rank++)
        if (job->pids[rank] > 0)
            kill(job->pids[rank], sig);
    each_child(job, signal_adopted, sig);
}

/* The first failure decides the exit status; later ones are its echoes. */
static void note_failure(struct job *job, int status)
{
    if (!job->failed) {
        job->failed = true;
        job->status = status;
    }
}

/* Ask the ranks to stop with sig; SIGKILL follows after the grace period. */
static void terminate(struct job *job, int sig)
{
    signal_ranks(job, sig);
    job->phase = TERMINATING;
    job->deadline = now() + job->opt->grace;
}

static void kill_ranks(struct job *job)
{
    signal_ranks(job, SIGKILL);
    job->phase = KILLED;
}

static void rank_exited(struct job *job, pid_t pid, int wstatus)
{
    int rank = rank_of(job, pid);
    if (rank < 0)
        return; /* not a rank: one we had before, or one a rank left */
    job->pids[rank] = 0;
    job->live--;

    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
        return;
    /* Once we have signalled the ranks, their deaths are our doing: say
     * nothing, or every teardown would print a line per rank. */
    if (job->phase < TERMINATING) {
        if (WIFSIGNALED(wstatus))
            say("rank %d (pid %ld) killed by signal %d", rank, (long)pid,
                WTERMSIG(wstatus));
        else
            say("rank %d (pid %ld) exited with status %d", rank, (long)pid,
                WEXITSTATUS(wstatus));
    }
    note_failure(job, WIFSIGNALED(wstatus) ? 128 + WTERMSIG(wstatus)
                                           : WEXITSTATUS(wstatus));
    if (job->phase == RUNNING && !job->opt->keep_going) {
        job->phase = GRACE;
        job->deadline = now() + job->opt->grace;
    }
}

static void reap_ranks(struct job *job)
{
    pid_t pid;
    int wstatus;
    while ((pid = waitpid(-1, &wstatus, WNOHANG)) > 0)
        rank_exited(job, pid, wstatus);
}

/* Once a failed job's ranks are gone, what they left goes as the ranks
 * went: SIGTERM, the grace period, then SIGKILL, round after round (what a
 * killed process leaves comes to us in turn) for up to a second more. */
static void kill_adopted(struct job *job)
{
    if (!each_child(job, signal_adopted, SIGTERM))
        return;
    double term_end = now() + job->opt->grace, kill_end = term_end + 1.0;
    int sig = 0; /* only count them during the grace period */
    while (each_child(job, signal_adopted, sig) > 0 && now() < kill_end) {
        reap_ranks(job);
        nanosleep(&(struct timespec){ .tv_nsec = SWEEP_NS }, NULL);
        if (now() >= term_end)
            sig = SIGKILL;
    }
    reap_ranks(job);
}

/* A signal that would end xdevrun (so leave the boot directory behind):
 * pass it on to the ranks; a second one means the user will not wait for
 * the grace period. */
static void interrupted(struct job *job, int sig)
{
    note_failure(job, 128 + sig);
    if (job->phase < TERMINATING)
        terminate(job, sig);
    else
        kill_ranks(job);
}

static void read_signals(struct job *job, int sfd)
{
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
        if (si.ssi_signo != SIGCHLD) /* children are reaped by the caller */
            interrupted(job, (int)si.ssi_signo);
}

static void check_deadlines(struct job *job)
{
    double t = now();

    if (job->phase < TERMINATING && t >= job->timeout_at) {
        say("timeout after %g s", job->opt->timeout);
        note_failure(job, EXIT_TIMEOUT);
        terminate(job, SIGTERM);
    } else if (job->phase == GRACE && t >= job->deadline) {
        terminate(job, SIGTERM);
    } else if (job->phase == TERMINATING && t >= job->deadline) {
        kill_ranks(job);
    }
}

static double next_deadline(const struct job *job)
{
    if (job->phase == RUNNING)
        return job->timeout_at;
    if (job->phase == GRACE)
        return job->deadline < job->timeout_at ? job->deadline : job->timeout_at;
    if (job->phase == TERMINATING)
        return job->deadline;
    return INFINITY;
}

/* The ppoll timeout that ends at deadline, or NULL to wait for a signal. */
static struct timespec *time_until(double deadline, struct timespec *ts)
{
    if (isinf(deadline))
        return NULL;
    double left = deadline - now();
    left = left < 0 ? 0 : left > MAX_WAIT ? MAX_WAIT : left;
    ts->tv_sec = (time_t)left;
    ts->tv_nsec = (long)((left - (double)ts->tv_sec) * 1e9);
    return ts;
}

/* Sleep until a signal or the next deadline, then act on it, until every
 * rank has been reaped. */
static void supervise(struct job *job, int sfd)
{
    struct pollfd pfd = {.fd = sfd, .events = POLLIN};

    while (job->live > 0) {
        struct timespec ts;
        if (ppoll(&pfd, 1, time_until(next_deadline(job), &ts), NULL) < 0 &&
            errno != EINTR) {
            say("ppoll: %s", strerror(errno));
            note_failure(job, EXIT_LAUNCH);
            kill_ranks(job);
        }
        read_signals(job, sfd);
        reap_ranks(job);
        check_deadlines(job);
    }
}

/* Start the ranks and wait for them; returns xdevrun's exit status. */
static int run_job(const struct options *opt)
{
    sigset_t handled, orig_mask;
    sigemptyset(&handled);
    for (const int *sig = (const int[]){ SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
                                          SIGUSR2, 0 };
         *sig; sig++)
        sigaddset(&handled, *sig);
    /* Blocked before the first fork so that no SIGCHLD or SIGTERM can be
     * lost; from here on they are read from the signalfd. */
    sigprocmask(SIG_BLOCK, &handled, &orig_mask);
    int sfd = signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
    pid_t *pids = calloc((size_t)opt->nranks, sizeof *pids);
    if (sfd < 0 || !pids) {
        say("cannot set up: %s", strerror(errno));
        free(pids);
        return EXIT_LAUNCH;
    }

    struct job job = {
        .opt = opt,
        .pids = pids,
        .timeout_at = opt->timeout > 0 ? now() + opt->timeout : INFINITY,
    };
    /* Orphans of the ranks' own children come to us, not to init, so a
     * teardown reaches them too; children we already had are not the job's. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    each_child(&job, keep_child, 0);
    if (!start_ranks(&job, &orig_mask)) {
        note_failure(&job, EXIT_LAUNCH);
        terminate(&job, SIGTERM);
    }
    supervise(&job, sfd);
    if (job.failed)
        kill_adopted(&job);
    close(sfd);
    free(pids);
    free(job.kept);
    return job.status;
}

static int remove_entry(const char *path, const struct stat *sb, int type,
                        struct FTW *ftw)
{
    (void)sb;
    (void)type;
    (void)ftw;
    if (remove(path) < 0 && errno != ENOENT)
        say("cannot remove %s: %s", path, strerror(errno));
    return 0; /* carry on: remove as much as we can */
}

static void remove_boot_dir(const char *dir)
{
    /* Contents before their directory (FTW_DEPTH), and never through a
     * symlink that a rank left behind (FTW_PHYS). */
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A shared-memory transport names its segments "xdev-<job id>..."; ranks
 * that were killed never got to unlink theirs. */
static void remove_shm_segments(const char *job_id)
{
    char prefix[64];
    size_t len = (size_t)snprintf(prefix, sizeof prefix, "xdev-%s", job_id);
    DIR *dir = opendir("/dev/shm");
    if (!dir)
        return; /* no /dev/shm, so no segments either */

    struct dirent *e;
    while ((e = readdir(dir)) != NULL)
        if (strncmp(e->d_name, prefix, len) == 0 &&
            unlinkat(dirfd(dir), e->d_name, 0) < 0 && errno != ENOENT)
            say("cannot remove /dev/shm/%s: %s", e->d_name, strerror(errno));
    closedir(dir);
}

int main(int argc, char **argv)
{
    struct options opt;
    char job_id[32], secret[33], boot_dir[PATH_MAX];

    parse_options(argc, argv, &opt);
    if (make_job_id(job_id, sizeof job_id) < 0 || random_hex(secret, 16) < 0 ||
        make_boot_dir(job_id, boot_dir, sizeof boot_dir) < 0)
        return EXIT_LAUNCH;

    int status = EXIT_LAUNCH;
    if (export_job_env(&opt, job_id, secret, boot_dir) == 0)
        status = run_job(&opt);
    remove_boot_dir(boot_dir);
    remove_shm_segments(job_id);
    return status;
}

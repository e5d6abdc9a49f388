/*
 * Open MPI's side of `deno task vs-mpi` (scripts/vs_mpi/open_mpi.ts builds it with mpicc): the
 * collectives dccl measures, timed and checked the way dccl's harness does, written as rows of
 * dccl's own CSV so that `deno task compare` reads both.
 *
 *   per size (1, 2, 4, ... max floats): warm-up, then R repeats of (barrier, I timed ops);
 *   a repeat's time per op = sum over ranks of each rank's loop time / (ranks * I), and time_us
 *   is the median repeat; min_us / max_us are the fastest and slowest rank's in that repeat.
 *   Inputs are small integers, so every sum is exact whatever order MPI adds in; wrong counts
 *   the elements, over all ranks, that differ from the exact result after the timed loop.
 *
 *   sendrecv  ranks 0 and 1 exchange (MPI_Sendrecv): both send and receive at once, as dccl's
 *   bcast     MPI_Bcast from rank 0
 *   reduce    MPI_Reduce, sum, to rank 0
 *   allreduce MPI_Allreduce, sum
 *   latency   rank i and i + n/2 ping-pong (MPI_Send, MPI_Recv): osu_latency, osu_multi_lat
 *   bw        a window of W MPI_Isend one way into W blocks, then a one-float acknowledgement
 *   bibw      a window of W each way at once (osu_bibw)
 *   mbw_mr    bw on every pair at once (osu_mbw_mr)
 *   alltoallv MPI_Alltoallv by the counts of a traffic file (-v FILE, written by vs-mpi from the
 *             same matrix dccl scales): a line per size, the mean count per rank then the N×N
 *             counts, rank i's row what it sends; its sizes are the file's, not the doublings
 *   The point-to-point rows are per message, as dccl's: time_us is the op's time over its
 *   messages in series (2, or W), and algbw counts every stream (the pairs, both ways for bibw).
 *
 * usage: mpi_coll -m MAX_FLOATS -p prim,prim -t SECONDS_PER_SIZE -r REPEATS -w WINDOW -v FILE
 * output (rank 0): the CSV header, then a row per primitive and size.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, window = 64;

/* What rank r holds at element i: small integers, so sums over ranks are exact in f32. */
static float input(int r, long i) { return (float)((r + 1) * ((i % 1021) + 1)); }

static void fill(float *buf, long n, int r)
{
    for (long i = 0; i < n; i++) buf[i] = r < 0 ? -1.0f : input(r, i);
}

/* Elements of buf that differ from rank `from`'s input, or from the sum over ranks (from < 0). */
static long wrong_in(const float *buf, long n, int from)
{
    const float ranks = (float)size * (size + 1) / 2.0f;
    long wrong = 0;
    for (long i = 0; i < n; i++) {
        float want = from >= 0 ? input(from, i) : ranks * (float)((i % 1021) + 1);
        wrong += buf[i] != want;
    }
    return wrong;
}

typedef enum { SENDRECV, BCAST, REDUCE, ALLREDUCE, LATENCY, BW, BIBW, MBW_MR, ALLTOALLV } prim_t;
static const char *NAMES[] = {"sendrecv", "bcast", "reduce", "allreduce", "latency",
                              "bw",       "bibw",  "mbw_mr", "alltoallv"};

/* The current size's alltoallv counts and displacements (packed), this rank's and all ranks'. */
static int *counts_all, *sc, *sd, *rc, *rd;

/* Reads the next size of the traffic file into the counts; the mean count, or -1 at its end. */
static long next_traffic(FILE *f)
{
    long mean;
    if (!f || fscanf(f, "%ld", &mean) != 1) return -1;
    for (int k = 0; k < size * size; k++)
        if (fscanf(f, "%d", &counts_all[k]) != 1) return -1;
    for (int j = 0, s = 0, r = 0; j < size; j++) {
        sc[j] = counts_all[rank * size + j];
        sd[j] = s;
        s += sc[j];
        rc[j] = counts_all[j * size + rank];
        rd[j] = r;
        r += rc[j];
    }
    return mean;
}

/* Where rank i's block for rank j starts in rank i's send buffer. */
static long send_displ(int i, int j)
{
    long at = 0;
    for (int q = 0; q < j; q++) at += counts_all[i * size + q];
    return at;
}

/* This rank's partner in the pairwise tests, and whether it is the one that starts. */
static int peer_of(void) { return rank < size / 2 ? rank + size / 2 : rank - size / 2; }
static int starts(void) { return rank < size / 2; }

/* A window of W sends (if `sends`) and W receives into blocks of n (if `receives`), completed. */
static void window_of(float *send, float *recv, int n, int sends, int receives)
{
    static MPI_Request requests[2 * 4096];
    int k = 0, peer = peer_of();
    for (int j = 0; receives && j < window; j++)
        MPI_Irecv(recv + (long)j * n, n, MPI_FLOAT, peer, 8, MPI_COMM_WORLD, &requests[k++]);
    for (int j = 0; sends && j < window; j++)
        MPI_Isend(send, n, MPI_FLOAT, peer, 8, MPI_COMM_WORLD, &requests[k++]);
    MPI_Waitall(k, requests, MPI_STATUSES_IGNORE);
}

static void op(prim_t p, float *send, float *recv, int n)
{
    float ack = 0;
    switch (p) {
    case LATENCY:
        if (starts()) {
            MPI_Send(send, n, MPI_FLOAT, peer_of(), 9, MPI_COMM_WORLD);
            MPI_Recv(recv, n, MPI_FLOAT, peer_of(), 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(recv, n, MPI_FLOAT, peer_of(), 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(send, n, MPI_FLOAT, peer_of(), 9, MPI_COMM_WORLD);
        }
        break;
    case BW:
    case MBW_MR:
        window_of(send, recv, n, starts(), !starts());
        if (starts()) MPI_Recv(&ack, 1, MPI_FLOAT, peer_of(), 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else MPI_Send(&ack, 1, MPI_FLOAT, peer_of(), 10, MPI_COMM_WORLD);
        break;
    case BIBW:
        window_of(send, recv, n, 1, 1);
        break;
    case ALLTOALLV:
        (void)n;
        MPI_Alltoallv(send, sc, sd, MPI_FLOAT, recv, rc, rd, MPI_FLOAT, MPI_COMM_WORLD);
        break;
    case SENDRECV:
        if (rank < 2) {
            int peer = 1 - rank;
            MPI_Sendrecv(send, n, MPI_FLOAT, peer, 7, recv, n, MPI_FLOAT, peer, 7, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
        }
        break;
    case BCAST:
        MPI_Bcast(rank == 0 ? send : recv, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
        break;
    case REDUCE:
        MPI_Reduce(send, recv, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case ALLREDUCE:
        MPI_Allreduce(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    }
}

/* Wrong elements on this rank after `p` (summed over ranks by the caller). */
static long check(prim_t p, const float *recv, long n)
{
    long wrong = 0;
    switch (p) {
    case LATENCY: return wrong_in(recv, n, peer_of());
    case BW:
    case MBW_MR:
    case BIBW:
        if (p != BIBW && starts()) return 0;
        for (int j = 0; j < window; j++) wrong += wrong_in(recv + (long)j * n, n, peer_of());
        return wrong;
    case ALLTOALLV:
        /* Block i came from rank i: its inputs from where its block for this rank starts. */
        for (int i = 0; i < size; i++) {
            long from = send_displ(i, rank);
            for (int k = 0; k < rc[i]; k++) wrong += recv[rd[i] + k] != input(i, from + k);
        }
        return wrong;
    case SENDRECV: return rank < 2 ? wrong_in(recv, n, 1 - rank) : 0;
    case BCAST: return rank == 0 ? 0 : wrong_in(recv, n, 0);
    case REDUCE: return rank == 0 ? wrong_in(recv, n, -1) : 0;
    default: return wrong_in(recv, n, -1);
    }
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One repeat: the loop time of every rank, reduced to [sum, min, max]. */
static void timed(prim_t p, float *send, float *recv, int n, int iters, double out[3])
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) op(p, send, recv, n);
    double t = MPI_Wtime() - t0;
    MPI_Reduce(&t, &out[0], 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t, &out[1], 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t, &out[2], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    long max = 1L << 22;
    double per_size = 0.2;
    int repeats = 3, c;
    char prims[256] = "allreduce,bcast,reduce", traffic[4096] = "";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((c = getopt(argc, argv, "m:p:t:r:w:v:")) != -1) {
        if (c == 'm') max = atol(optarg);
        else if (c == 'p') snprintf(prims, sizeof prims, "%s", optarg);
        else if (c == 't') per_size = atof(optarg);
        else if (c == 'r') repeats = atoi(optarg) < 1 ? 1 : atoi(optarg) > 15 ? 15 : atoi(optarg);
        else if (c == 'w') window = atoi(optarg) < 1 ? 1 : atoi(optarg) > 4096 ? 4096 : atoi(optarg);
        else if (c == 'v') snprintf(traffic, sizeof traffic, "%s", optarg);
        else MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* A window's receives land in blocks of their own; a skewed alltoallv's busiest rank holds
     * up to every rank's share. */
    long blocks = strstr(prims, "bw") ? window : strstr(prims, "alltoallv") ? size : 1;
    counts_all = malloc(sizeof(int) * size * size);
    sc = malloc(sizeof(int) * size), sd = malloc(sizeof(int) * size);
    rc = malloc(sizeof(int) * size), rd = malloc(sizeof(int) * size);
    long sends = strstr(prims, "alltoallv") ? size : 1;
    float *send = malloc(sizeof(float) * max * sends), *recv = malloc(sizeof(float) * max * blocks);
    if (!send || !recv) {
        fprintf(stderr, "rank %d: cannot allocate %ld x %ld floats\n", rank, blocks + 1, max);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    fill(send, max * sends, rank);
    if (rank == 0) {
        printf("primitive,transport,memory,algorithm,procs,count,bytes,iters,time_us,min_us,max_us,"
               "gbps,algbw_gbs,busbw_gbs,wrong\n");
    }
    char *rest, *name;
    for (name = strtok_r(prims, ",", &rest); name; name = strtok_r(NULL, ",", &rest)) {
        prim_t p;
        for (p = SENDRECV; p <= ALLTOALLV && strcmp(name, NAMES[p]); p++) {}
        if (p > ALLTOALLV || (p == SENDRECV && size != 2) ||
            (p >= LATENCY && p <= MBW_MR && size % 2) || (p == ALLTOALLV && !traffic[0])) {
            if (rank == 0) fprintf(stderr, "mpi_coll: %s is not measured on %d ranks\n", name, size);
            continue;
        }
        double bus = p == ALLREDUCE ? 2.0 * (size - 1) / size
                     : p == ALLTOALLV ? (double)(size - 1) / size : 1.0;
        FILE *sizes = p == ALLTOALLV ? fopen(traffic, "r") : NULL;
        /* Per message: messages in series per op, streams at once. */
        double messages = p == LATENCY ? 2 : p >= BW && p <= MBW_MR ? window : 1;
        double streams = p == BIBW ? size : p >= LATENCY && p <= MBW_MR ? size / 2 : 1;
        for (long n = p == ALLTOALLV ? next_traffic(sizes) : 1; n > 0 && n <= max;
             n = p == ALLTOALLV ? next_traffic(sizes) : 2 * n) {
            fill(recv, n * (p >= BW ? blocks : 1), -1);
            /* Iterations: as many as fill per_size seconds, timed from batches that double until
             * one takes 10 ms (16 ops at least), going by the fastest batch per op (a batch the scheduler
             * interrupted says nothing of the op); rank 0 decides for all. */
            double guess = 1e30;
            for (int k = 1;; k *= 2) {
                double t[3];
                timed(p, send, recv, (int)n, k, t);
                if (t[0] / size / k < guess) guess = t[0] / size / k;
                int more = (t[0] / size < 0.01 || k < 16) && k < 65536;
                MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
                if (!more) break;
            }
            MPI_Bcast(&guess, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            long it = guess > 0 ? (long)(per_size / repeats / guess) : 10000;
            int iters = it < 2 ? 2 : it > 10000 ? 10000 : (int)it;
            for (int i = 0; i < iters / 10 + 1; i++) op(p, send, recv, (int)n);
            double sums[15], mins[15], maxs[15];
            for (int r = 0; r < repeats; r++) {
                double t[3];
                timed(p, send, recv, (int)n, iters, t);
                sums[r] = t[0];
                mins[r] = t[1];
                maxs[r] = t[2];
            }
            long wrong = check(p, recv, n), total = 0;
            MPI_Reduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
            if (rank != 0) continue;
            /* The median repeat, and its fastest and slowest rank. */
            double sorted[15];
            memcpy(sorted, sums, sizeof(double) * repeats);
            qsort(sorted, repeats, sizeof(double), by_value);
            int median = 0;
            while (sums[median] != sorted[repeats / 2]) median++;
            double us = sums[median] / ((double)size * iters * messages) * 1e6;
            double bytes = (double)n * 4, algbw = bytes * streams / us / 1e3;
            printf("%s,mpi,host,open-mpi,%d,%ld,%.0f,%d,%.4f,%.4f,%.4f,%.6f,%.6f,%.6f,%ld\n",
                   name, size, n, bytes, iters, us, mins[median] / (iters * messages) * 1e6,
                   maxs[median] / (iters * messages) * 1e6, algbw * 8, algbw, algbw * bus, total);
            fflush(stdout);
        }
        if (sizes) fclose(sizes);
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
